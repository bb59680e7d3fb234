# The install test (cmake -P): install the build tree into a fresh prefix, check its layout, build
# the basic sample tool out of tree against the installed CMake package, and run the installed
# kreplay-sample-app with that tool.
#
# Inputs (-D): BUILD_DIR, SOURCE_DIR (kreplay's root), WORK_DIR, GENERATOR, C_COMPILER,
#              BINDIR, LIBDIR, INCLUDEDIR, DATADIR (the GNUInstallDirs values of the build).
foreach(_var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR C_COMPILER BINDIR LIBDIR INCLUDEDIR DATADIR)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "run_install_test.cmake needs -D${_var}=...")
  endif()
endforeach()

set(PREFIX ${WORK_DIR}/prefix)
set(TOOL_SRC ${WORK_DIR}/tool-src)
set(TOOL_BUILD ${WORK_DIR}/tool-build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# run(<what> COMMAND ...): run a command, stop the test with its output when it fails.
function(run what)
  execute_process(${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(RUN_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

# 1. Install.
run("cmake --install" COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})

# 2. The layout: the directories the README promises and the files a tool author needs.
foreach(_path
    ${BINDIR}/kreplay-sample-app
    ${LIBDIR}/libkreplay.so
    ${LIBDIR}/libkreplay_hostrt.so
    ${INCLUDEDIR}/kreplay/kreplay.h
    ${INCLUDEDIR}/kreplay/kernel_replay.h
    ${DATADIR}/kreplay
    ${LIBDIR}/cmake/kreplay/kreplayConfig.cmake
    ${LIBDIR}/cmake/kreplay/kreplayConfigVersion.cmake
    ${LIBDIR}/cmake/kreplay/kreplayTargets.cmake)
  if(NOT EXISTS ${PREFIX}/${_path})
    message(FATAL_ERROR "install test: ${_path} is missing from the install prefix ${PREFIX}")
  endif()
endforeach()
# Every public header is installed.
file(GLOB _headers RELATIVE ${SOURCE_DIR}/include ${SOURCE_DIR}/include/kreplay/*.h)
foreach(_h IN LISTS _headers)
  if(NOT EXISTS ${PREFIX}/${INCLUDEDIR}/${_h})
    message(FATAL_ERROR "install test: public header ${_h} was not installed")
  endif()
endforeach()

# 3. Build samples/basic out of tree against the installed package only.
file(COPY ${SOURCE_DIR}/samples/basic/basic.c DESTINATION ${TOOL_SRC})
file(COPY ${CMAKE_CURRENT_LIST_DIR}/standalone/CMakeLists.txt DESTINATION ${TOOL_SRC})
run("configuring the out-of-tree tool"
    COMMAND ${CMAKE_COMMAND} -S ${TOOL_SRC} -B ${TOOL_BUILD} -G ${GENERATOR}
            -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_PREFIX_PATH=${PREFIX} -DKREPLAY_EXPECTED_PREFIX=${PREFIX}
            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run("building the out-of-tree tool" COMMAND ${CMAKE_COMMAND} --build ${TOOL_BUILD})
set(TOOL ${TOOL_BUILD}/libkreplay_sample_basic.so)
if(NOT EXISTS ${TOOL})
  message(FATAL_ERROR "install test: the build made no ${TOOL}")
endif()

# 4. The installed application and the fresh tool load the installed libkreplay.so, not the build
#    tree's (ldd lists what the dynamic loader would pick).
foreach(_binary ${PREFIX}/${BINDIR}/kreplay-sample-app ${TOOL})
  run("ldd ${_binary}" COMMAND ldd ${_binary})
  string(REGEX MATCH "libkreplay\\.so[^\n]*=> ([^ \n]*)" _line "${RUN_OUTPUT}")
  set(_resolved "${CMAKE_MATCH_1}")
  cmake_path(IS_PREFIX PREFIX "${_resolved}" NORMALIZE _inside)
  if(NOT _inside)
    message(FATAL_ERROR "install test: ${_binary} resolves libkreplay.so to '${_resolved}', "
                        "not inside ${PREFIX}:\n${RUN_OUTPUT}")
  endif()
endforeach()

# 5. Run the installed application with the freshly built tool and check both outputs.
run("running the installed kreplay-sample-app"
    COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH KREPLAY_TOOL_LIBRARIES=${TOOL}
            KREPLAY_LOG_LEVEL=warning ${PREFIX}/${BINDIR}/kreplay-sample-app)
set(_out "${RUN_OUTPUT}")
if(NOT _out MATCHES "\nsample-app: OK")
  message(FATAL_ERROR "install test: the application did not print 'sample-app: OK':\n${_out}")
endif()
string(REGEX MATCHALL "==KREPLAY-SAMPLE== dispatch [0-9]+ [^\n]* pass [1-3]/3 exit" _exits "${_out}")
list(LENGTH _exits _n)
if(NOT _n EQUAL 30)
  message(FATAL_ERROR "install test: expected 30 pass exits (10 launches x 3 passes), got ${_n}:\n${_out}")
endif()
if(NOT _out MATCHES "==KREPLAY-SAMPLE== basic: 10 dispatches, 10 replayed, 30 passes")
  message(FATAL_ERROR "install test: the tool's summary is missing or wrong:\n${_out}")
endif()
message(STATUS "install test: OK (installed into ${PREFIX}; out-of-tree tool replayed 10 launches x 3)")
