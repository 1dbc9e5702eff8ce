# Every chapter is built twice from one header in chapters/NN-name/:
#   sa_NN_solutions  from solutions/NN-name/*.cpp  (the reference)
#   sa_NN_exercises  from exercises/NN-name/*.cpp  (the reader's stubs)
# and a program chapters/NN-name/main.cpp (with its steps_*.cpp) that links
# the track SA_TRACK picks.
# Headers are included as "NN-name/header.hpp" from chapters/.

set(SA_CHAPTERS "")  # NN-name of each chapter added, in order

function(sa_add_chapter number name)
  set(chapter ${number}-${name})
  foreach(track solutions exercises)
    file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${track}/${chapter}/*.cpp)
    if(NOT sources)
      # A reader who deleted a chapter's exercise files: the library gets an
      # empty file instead, so that the tree still configures and `./book
      # reset` (which must be built) can put them back; `./book check` says
      # which file is missing.
      set(placeholder ${PROJECT_BINARY_DIR}/missing/${track}-${chapter}.cpp)
      # (CONFIGURE writes only a changed file: the library is not rebuilt on every configure)
      file(CONFIGURE OUTPUT ${placeholder} CONTENT "// ${track}/${chapter}/ holds no .cpp file: see ./book reset\n")
      set(sources ${placeholder})
    endif()
    add_library(sa_${number}_${track} STATIC ${sources})
    target_include_directories(sa_${number}_${track} PUBLIC ${PROJECT_SOURCE_DIR}/chapters)
    target_link_libraries(sa_${number}_${track} PUBLIC sa_common)
  endforeach()
  # The reader's code is built to report its mistakes (SA_EXERCISE_OPTIONS,
  # top-level CMakeLists.txt). The exercise library holds only the reader's
  # files (chapter 7 adds compiled objects, which are not compiled again).
  sa_exercise(sa_${number}_exercises)

  # Libraries of this chapter and the ones before, later ones first so that
  # static linking resolves a chapter's calls into earlier chapters.
  set(program_libs "")
  set(earlier_solutions "")
  foreach(previous IN LISTS SA_CHAPTERS)
    string(SUBSTRING ${previous} 0 2 n)
    list(PREPEND program_libs sa_${n}_${SA_TRACK})
    list(PREPEND earlier_solutions sa_${n}_solutions)
  endforeach()
  list(PREPEND program_libs sa_${number}_${SA_TRACK})

  # The program: main.cpp, which lists the steps, and the steps_*.cpp files
  # that hold them by theme (each chapter's steps.hpp says which holds which).
  file(GLOB steps CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/chapters/${chapter}/steps_*.cpp)
  add_executable(${chapter} ${PROJECT_SOURCE_DIR}/chapters/${chapter}/main.cpp ${steps})
  # A chapter's program is its narrative: it prints, and calls the chapter's
  # functions, which do the arithmetic and are compiled with full
  # optimisation in the libraries. -O1 compiles a program in about half the
  # time of -O3 (a first `./book start` builds all of them) and prints the
  # same numbers: the optimisation level changes no float result without
  # -ffast-math.
  sa_narrative(${chapter})
  target_link_libraries(${chapter} PRIVATE ${program_libs})
  set_target_properties(${chapter} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

  # What the hidden suites link: all solutions up to this chapter, or this
  # chapter's exercises on top of the earlier chapters' solutions (so one
  # unfinished chapter never breaks another's check).
  set(SA_${number}_SOLUTIONS_LIBS sa_${number}_solutions ${earlier_solutions} PARENT_SCOPE)
  set(SA_${number}_EXERCISES_LIBS sa_${number}_exercises ${earlier_solutions} PARENT_SCOPE)
  list(APPEND SA_CHAPTERS ${chapter})
  set(SA_CHAPTERS ${SA_CHAPTERS} PARENT_SCOPE)
endfunction()

# The one list of chapters (chapters/chapters.txt): a line there and the
# chapter's folders are all it takes to add one. A chapter's extra programs
# (chapter 7's benchmark and analyzer) live in its folder's programs.cmake.
file(STRINGS ${PROJECT_SOURCE_DIR}/chapters/chapters.txt SA_CHAPTER_LIST REGEX "^[0-9][0-9]-")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/chapters/chapters.txt)
foreach(entry IN LISTS SA_CHAPTER_LIST)
  string(STRIP "${entry}" entry)
  string(SUBSTRING ${entry} 0 2 number)
  string(SUBSTRING ${entry} 3 -1 name)
  sa_add_chapter(${number} ${name})
  if(EXISTS ${PROJECT_SOURCE_DIR}/chapters/${entry}/programs.cmake)
    include(${PROJECT_SOURCE_DIR}/chapters/${entry}/programs.cmake)
  endif()
endforeach()

# `programs`: every chapter's programs (the chapters, their benchmarks and
# analyzers), without the exercise track's libraries or any suite. The book's
# commands build what they need and no more: `./book start` one chapter
# after another, `./book test` the target `solution_suites` (tests/).
get_property(sa_all_targets DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
set(SA_PROGRAMS "")
foreach(target IN LISTS sa_all_targets)
  if(target MATCHES "^[0-9][0-9]-")
    list(APPEND SA_PROGRAMS ${target})
  endif()
endforeach()
add_custom_target(programs DEPENDS ${SA_PROGRAMS})
