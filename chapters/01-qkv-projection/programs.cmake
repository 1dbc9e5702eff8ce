# The chapter program's steps, one file per group (see steps.hpp).
target_sources(01-qkv-projection PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/steps_by_hand.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_tokens.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_projection.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_positions.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps_path.cpp ${CMAKE_CURRENT_LIST_DIR}/steps_figures.cpp)
