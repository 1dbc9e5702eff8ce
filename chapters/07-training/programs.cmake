# Chapter 7's extra targets, included by cmake/Chapters.cmake after
# sa_07_solutions and sa_07_exercises exist.

# The chapter's own code, compiled once at the build type's optimisation:
# the layers' forwards (layers.cpp), the attention on every sequence at once
# (attention_lanes.cpp), the model and Adam (model.cpp), and the checkpoint
# format (checkpoint.cpp writes, checkpoint_read.cpp reads). Only the
# exercise functions differ between the tracks, so both track libraries
# hold these same objects: a program, a suite or a chapter 8 that links
# either gets them, and a static library resolves the calls between them
# and the reader's backward passes in both directions. (Headers only, this
# code was compiled again in every file that included it: seven minutes of
# a first build.)
add_library(sa_07_shared OBJECT
  ${CMAKE_CURRENT_LIST_DIR}/layers.cpp ${CMAKE_CURRENT_LIST_DIR}/attention_lanes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model.cpp)
# The checkpoint files read and write bytes, not tensors: compiled at -O1
# (sa_narrative), in half the time.
add_library(sa_07_checkpoint OBJECT
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp ${CMAKE_CURRENT_LIST_DIR}/checkpoint_read.cpp)
sa_narrative(sa_07_checkpoint)
# Checkpoints: safetensors with a JSON header (nlohmann-json) and CRC-32s
# (Boost.CRC, header-only).
foreach(part sa_07_shared sa_07_checkpoint)
  target_include_directories(${part} PUBLIC ${PROJECT_SOURCE_DIR}/chapters)
  target_link_libraries(${part} PUBLIC sa_common nlohmann_json::nlohmann_json Boost::headers)
endforeach()
foreach(track solutions exercises)
  target_sources(sa_07_${track} PRIVATE $<TARGET_OBJECTS:sa_07_shared> $<TARGET_OBJECTS:sa_07_checkpoint>)
  target_link_libraries(sa_07_${track} PUBLIC nlohmann_json::nlohmann_json Boost::headers)
endforeach()

# The benchmark and the analyzer always link the reference solutions: they
# measure and inspect the book's code, not the reader's exercise.

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

# The chapter program's tasks (see program.hpp), the first two in one file
# per group of steps (see task_reversal.hpp and task_corpus.hpp), and the
# saving all of them share.
target_sources(07-training PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/task_reversal.cpp ${CMAKE_CURRENT_LIST_DIR}/task_reversal_training.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_reversal_trained.cpp ${CMAKE_CURRENT_LIST_DIR}/task_reversal_positions.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_reversal_figures.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_corpus.cpp ${CMAKE_CURRENT_LIST_DIR}/task_corpus_training.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_corpus_heads.cpp ${CMAKE_CURRENT_LIST_DIR}/task_corpus_figures.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_pooling.cpp ${CMAKE_CURRENT_LIST_DIR}/saving.cpp)
