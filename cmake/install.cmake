# Installation: libraries, headers, the dwork tool, data, docs, pkg-config
# files and a CMake package (find_package(dwork) -> dwork::dwtrace, ...).
# Included last from the top-level CMakeLists.txt, so every target exists;
# targets still to be written are guarded with if(TARGET ...).
#
# Targets in the export set must not need unexported targets in their
# interface: use $<BUILD_INTERFACE:...> for source-tree include dirs.
include(CMakePackageConfigHelpers)

set(DW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dwork)

# Libraries: target name -> name after the dwork:: namespace.
set(DW_EXPORTED dwtrace_shared dwtrace dwtrace_static dwtrace_static
                dwork_shared dwork dwork_static dwork_static)
set(DW_INSTALL_LIBS)
while(DW_EXPORTED)
  list(POP_FRONT DW_EXPORTED t n)
  if(TARGET ${t})
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${n})
    list(APPEND DW_INSTALL_LIBS ${t})
  endif()
endwhile()
if(TARGET dwork_shared) # finds libdwtrace beside it in any prefix
  set_target_properties(dwork_shared PROPERTIES INSTALL_RPATH "$ORIGIN")
endif()
install(TARGETS ${DW_INSTALL_LIBS} EXPORT dworkTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# libseqtrace.so -> libseqtrace-5.1.2.so -> libdwtrace.so.N (installed as
# the symlinks they are), for binaries and bindings written for Extrae.  A
# static libdwtrace built with libxml2 or libdw needs them at link time.
install(FILES $<TARGET_FILE_DIR:dwtrace_shared>/libseqtrace.so
  $<TARGET_FILE_DIR:dwtrace_shared>/libseqtrace-${DW_EXTRAE_VERSION}.so
  DESTINATION ${CMAKE_INSTALL_LIBDIR})
get_target_property(DW_TRACE_LIBS dwtrace_static LINK_LIBRARIES)
if("LibXml2::LibXml2" IN_LIST DW_TRACE_LIBS)
  set(DW_FIND_LIBXML2 "find_dependency(LibXml2)")
  set(DW_PC_XML2 " -lxml2")
endif()
if("dw" IN_LIST DW_TRACE_LIBS)
  set(DW_PC_XML2 "${DW_PC_XML2} -ldw")
endif()

# Public headers: include/dwork/*.h and the Extrae compatibility headers.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

# The command line tool, installed as bin/dwork, finds libdwork beside it.
if(TARGET dwork_tool)
  get_target_property(n dwork_tool OUTPUT_NAME)
  if(NOT n)
    set_target_properties(dwork_tool PROPERTIES OUTPUT_NAME dwork)
  endif()
  file(RELATIVE_PATH rel ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(dwork_tool PROPERTIES INSTALL_RPATH "$ORIGIN/${rel}")
  install(TARGETS dwork_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/cfgs)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/cfgs/
    DESTINATION ${CMAKE_INSTALL_DATADIR}/dwork/cfgs)
endif()
if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/docs)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
endif()

# pkg-config files must name the prefix given at install time (cmake
# --install --prefix), so the install script fills it in.
function(dw_install_pc name)
  set(DW_PC_PREFIX "@DW_PC_PREFIX@") # kept for install time
  foreach(d LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
      set(DW_PC_${d} "${CMAKE_INSTALL_${d}}")
    else()
      set(DW_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
    endif()
  endforeach()
  set(pc ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${name}.pc.in ${pc}.in @ONLY)
  install(CODE "
    get_filename_component(DW_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
    configure_file(\"${pc}.in\" \"${pc}\" @ONLY)")
  install(FILES ${pc} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()

dw_install_pc(dwtrace)
if(TARGET dwork_shared)
  dw_install_pc(dwork)
endif()

# CMake package.  0.x releases break compatibility at each minor version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(compat SameMinorVersion)
else()
  set(compat SameMajorVersion)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dworkConfig.cmake.in
  ${PROJECT_BINARY_DIR}/dworkConfig.cmake INSTALL_DESTINATION ${DW_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dworkConfigVersion.cmake
  COMPATIBILITY ${compat})
install(FILES ${PROJECT_BINARY_DIR}/dworkConfig.cmake
  ${PROJECT_BINARY_DIR}/dworkConfigVersion.cmake DESTINATION ${DW_CMAKE_DIR})
install(EXPORT dworkTargets NAMESPACE dwork:: DESTINATION ${DW_CMAKE_DIR})
