# libkreplay_cuda.so: the injection library (CUDA_INJECTION64_PATH or LD_PRELOAD) holding the CUDA
# backend. Included from CMakeLists.txt when CUDA and CUPTI are found.

add_library(kreplay_cuda_symbols STATIC module_symbols.cpp vmm_tracker.cpp disassembly.cpp
            range_call_names.cpp)
target_include_directories(kreplay_cuda_symbols PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(kreplay_cuda_symbols PUBLIC kreplay_common ${KREPLAY_ELF_SHARED}
                      PRIVATE kreplay_build_flags)

add_library(kreplay_cuda SHARED cuda_backend.cpp device_heap.cpp cuda_counters.cpp cuda_warm_start.cpp graphs.cpp interceptor.cpp interceptor_costs.cpp kernels.cpp markers.cpp range_calls.cpp range_free.cpp range_memory.cpp memory_callbacks.cpp injection.cpp
            services/cupti_service.cpp services/pc_sampling.cpp services/sass_metrics.cpp
            services/pm_sampling.cpp
            ${CMAKE_CURRENT_SOURCE_DIR}/module_symbols.cpp ${CMAKE_CURRENT_SOURCE_DIR}/vmm_tracker.cpp
            ${CMAKE_CURRENT_SOURCE_DIR}/disassembly.cpp ${CMAKE_CURRENT_SOURCE_DIR}/range_call_names.cpp)
target_include_directories(kreplay_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(kreplay_cuda PRIVATE kreplay_sdk_internal kreplay_cuda_memory CUDA::cuda_driver
                      CUDA::cupti ${KREPLAY_ELF_SHARED} kreplay_build_flags)
if(TARGET kreplay_cupti)
  target_link_libraries(kreplay_cuda PRIVATE kreplay_cupti)
  target_compile_definitions(kreplay_cuda PRIVATE KREPLAY_HAVE_CUPTI_COUNTERS=1)
endif()
install(TARGETS kreplay_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Host-side unit tests of the backend's pure parts (run in CI without a GPU).
foreach(cubin symbols_kernels heap_kernels)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${cubin}.cubin
    COMMAND ${CMAKE_CUDA_COMPILER} -cubin -arch=sm_90 -o ${CMAKE_CURRENT_BINARY_DIR}/${cubin}.cubin
            ${CMAKE_CURRENT_SOURCE_DIR}/testdata/${cubin}.cu
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/testdata/${cubin}.cu)
endforeach()
add_custom_target(kreplay_test_cubin DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/symbols_kernels.cubin
                                             ${CMAKE_CURRENT_BINARY_DIR}/heap_kernels.cubin)
kreplay_add_unit_test(cuda_module_symbols_test SOURCES module_symbols_test.cpp LIBS kreplay_cuda_symbols)
if(TARGET cuda_module_symbols_test)
  add_dependencies(cuda_module_symbols_test kreplay_test_cubin)
  target_compile_definitions(cuda_module_symbols_test PRIVATE
    KREPLAY_TEST_CUBIN="${CMAKE_CURRENT_BINARY_DIR}/symbols_kernels.cubin"
    KREPLAY_TEST_HEAP_CUBIN="${CMAKE_CURRENT_BINARY_DIR}/heap_kernels.cubin")
endif()
kreplay_add_unit_test(cuda_vmm_tracker_test SOURCES vmm_tracker_test.cpp LIBS kreplay_cuda_symbols)
kreplay_add_unit_test(cuda_disassembly_test SOURCES disassembly_test.cpp LIBS kreplay_cuda_symbols)
kreplay_add_unit_test(cuda_range_call_names_test SOURCES range_call_names_test.cpp
                      LIBS kreplay_cuda_symbols)
if(TARGET cuda_disassembly_test)
  target_compile_definitions(cuda_disassembly_test PRIVATE
    KREPLAY_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/testdata")
endif()
