# Chapter 4's program is main.cpp (cmake/Chapters.cmake) and its steps, one
# file per group (see steps.hpp). Included by cmake/Chapters.cmake.
target_sources(04-multi-head PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/steps_split.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_heads.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_reading.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_beyond.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_figures.cpp)
