# Chapter 6's program is main.cpp (cmake/Chapters.cmake) and its steps, one
# file per group (see steps.hpp). Included by cmake/Chapters.cmake.
target_sources(06-dropout PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/steps_draw.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_statistics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_backward.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_figures.cpp)
