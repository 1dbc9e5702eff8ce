# Chapter 9's extra targets, included by cmake/Chapters.cmake after
# sa_09_solutions and sa_09_exercises exist.

# The chapter's own code, compiled once into both tracks (as chapter 7's
# layers): reading and checking the text (data.cpp, sha256.cpp). The
# tokenizer, an exercise, decodes UTF-8 with it. It reads bytes, not
# tensors: compiled at -O1 (sa_narrative), like chapter 7's checkpoints.
add_library(sa_09_shared OBJECT ${CMAKE_CURRENT_LIST_DIR}/data.cpp ${CMAKE_CURRENT_LIST_DIR}/sha256.cpp)
sa_narrative(sa_09_shared)
target_include_directories(sa_09_shared PUBLIC ${PROJECT_SOURCE_DIR}/chapters)
target_link_libraries(sa_09_shared PUBLIC sa_common)
# The GPT (model.cpp): arithmetic, compiled at the build type's
# optimisation, into both tracks like chapter 7's model. It calls the
# reader's clip_grad_norm and adamw_step, and chapters 7 and 8's layers and
# tiled attention, which the programs and suites link after it.
add_library(sa_09_model OBJECT ${CMAKE_CURRENT_LIST_DIR}/model.cpp)
target_include_directories(sa_09_model PUBLIC ${PROJECT_SOURCE_DIR}/chapters)
target_link_libraries(sa_09_model PUBLIC sa_common)
foreach(track solutions exercises)
  target_sources(sa_09_${track} PRIVATE $<TARGET_OBJECTS:sa_09_shared> $<TARGET_OBJECTS:sa_09_model>)
endforeach()
# The GPT's checkpoint (checkpoint.cpp): bytes, not tensors, at -O1 like
# chapter 7's checkpoint files, whose writer, atomic save and header checks
# it calls (in chapter 7's libraries, which chapter 9's link).
add_library(sa_09_checkpoint OBJECT ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp)
sa_narrative(sa_09_checkpoint)
target_include_directories(sa_09_checkpoint PUBLIC ${PROJECT_SOURCE_DIR}/chapters)
target_link_libraries(sa_09_checkpoint PUBLIC sa_common nlohmann_json::nlohmann_json Boost::headers)
foreach(track solutions exercises)
  target_sources(sa_09_${track} PRIVATE $<TARGET_OBJECTS:sa_09_checkpoint>)
endforeach()

# The generation command (./book generate): loads the checkpoint the
# chapter program saved and writes text after a prompt. Like chapter 7's
# analyzer it links the reference solutions, so that it works whatever the
# state of the reader's exercises.
add_executable(09-gpt-generate ${CMAKE_CURRENT_LIST_DIR}/generate.cpp)
target_link_libraries(09-gpt-generate PRIVATE ${SA_09_SOLUTIONS_LIBS})
set_target_properties(09-gpt-generate PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# The benchmark (./book bench 9): the median training step of the chapter's
# model, its GFLOP/s against this core's GEMM peak, generation with and
# without the key/value cache, and with --pytorch the twin's step. It links
# the reference solutions: it measures the book's code, not the reader's
# exercise.
add_executable(09-gpt-bench ${CMAKE_CURRENT_LIST_DIR}/bench.cpp)
target_link_libraries(09-gpt-bench PRIVATE ${SA_09_SOLUTIONS_LIBS})
set_target_properties(09-gpt-bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
