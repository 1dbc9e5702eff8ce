# The chapter program's steps, one file per group (see steps.hpp).
target_sources(03-softmax PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/steps_attention.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_softmax.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_gradient.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_weights.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_figures.cpp)
