# Chapter 8's benchmark (./book bench 8), included by cmake/Chapters.cmake.
# It links the reference solutions: it measures the book's code, not the
# reader's exercise.
add_executable(08-efficient-attention-bench ${CMAKE_CURRENT_LIST_DIR}/bench.cpp)
target_link_libraries(08-efficient-attention-bench PRIVATE ${SA_08_SOLUTIONS_LIBS})
set_target_properties(08-efficient-attention-bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

