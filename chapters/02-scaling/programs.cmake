# The chapter program's steps, one file per group (see steps.hpp).
target_sources(02-scaling PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/steps_scores.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_variance.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_softmax.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_geometry.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_figures.cpp)
