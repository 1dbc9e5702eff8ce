# Chapter 7's extra programs, included by cmake/Chapters.cmake. Both always
# link the reference solutions: they measure and inspect the book's code, not
# the reader's exercise.

# The benchmark (./book bench 7): the median time of a training step and an
# epoch of the reversal task, and the time to 99% held-out accuracy.
add_executable(07-training-bench ${CMAKE_CURRENT_LIST_DIR}/bench.cpp)
target_link_libraries(07-training-bench PRIVATE ${SA_07_SOLUTIONS_LIBS})
set_target_properties(07-training-bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# The analysis command (./book analyze): loads a checkpoint the chapter
# program saved and shows one head's attention on a text.
add_executable(07-training-analyze ${CMAKE_CURRENT_LIST_DIR}/analyze.cpp)
target_link_libraries(07-training-analyze PRIVATE ${SA_07_SOLUTIONS_LIBS})
set_target_properties(07-training-analyze PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# The checkpoints (checkpoint.hpp, header-only, read by both tracks, the
# programs and the suites): safetensors with a JSON header (nlohmann-json) and
# CRC-32s (Boost.CRC, header-only).
foreach(track solutions exercises)
  target_link_libraries(sa_07_${track} PUBLIC nlohmann_json::nlohmann_json Boost::headers)
endforeach()

# The chapter program's tasks, one file each (see program.hpp).
target_sources(07-training PRIVATE ${CMAKE_CURRENT_LIST_DIR}/task_reversal.cpp ${CMAKE_CURRENT_LIST_DIR}/task_corpus.cpp
                                   ${CMAKE_CURRENT_LIST_DIR}/task_pooling.cpp)
