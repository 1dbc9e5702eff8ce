# Chapter 5's program is main.cpp (cmake/Chapters.cmake) and its steps, one
# file per group (see steps.hpp). Included by cmake/Chapters.cmake.
target_sources(05-causal-mask PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/steps_causal.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_padding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_empty_rows.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_figures.cpp)
