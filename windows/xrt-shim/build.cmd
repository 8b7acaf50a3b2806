@echo off
rem Builds ggml-xdna-xrt.dll, the plugin's way to the NPU on Windows: the C interface of src\npu\npu_xrt_c.h,
rem implemented by src\npu\npu_xrt_c.cpp against XRT's C++ API, compiled with MSVC (XRT's Windows DLL exports
rem MSVC-mangled C++, which the MinGW-built plugin cannot call). Put the DLL beside ggml-xdna.dll.
rem
rem This script has never been run: the project is built and tested on Linux, where MSVC, the Windows SDK and XRT for
rem Windows cannot be had. See README.md in this folder for what is known and what to check.
rem
rem Run it from "x64 Native Tools Command Prompt for VS" (Visual Studio Build Tools 2022, C++ workload):
rem   build.cmd XRT_INCLUDE_DIR [XRT_COREUTIL]
rem     XRT_INCLUDE_DIR  the folder holding xrt\xrt_kernel.h (XRT's Windows SDK, e.g. from the Ryzen AI Software)
rem     XRT_COREUTIL     xrt_coreutil.lib, or xrt_coreutil.dll (the driver's; an import library is made from it);
rem                      default: the xrt_coreutil.dll found by "where", then in System32
setlocal enableextensions
set "HERE=%~dp0"
set "SRC=%HERE%..\..\src\npu"
set "XRT_INC=%~1"
set "XRT_LIB=%~2"
if "%XRT_INC%"=="" (echo usage: build.cmd XRT_INCLUDE_DIR [XRT_COREUTIL] & exit /b 2)
if not exist "%XRT_INC%\xrt\xrt_kernel.h" (echo %XRT_INC%\xrt\xrt_kernel.h not found: not XRT's include folder & exit /b 1)
where cl >nul 2>nul || (echo cl.exe not found: run this from the x64 Native Tools Command Prompt & exit /b 1)

if "%XRT_LIB%"=="" for /f "delims=" %%d in ('where xrt_coreutil.dll 2^>nul') do if "%XRT_LIB%"=="" set "XRT_LIB=%%d"
if "%XRT_LIB%"=="" if exist "%SystemRoot%\System32\xrt_coreutil.dll" set "XRT_LIB=%SystemRoot%\System32\xrt_coreutil.dll"
if "%XRT_LIB%"=="" (echo xrt_coreutil not found: pass its .lib or .dll as the second argument & exit /b 1)

set "OUT=%HERE%out"
if not exist "%OUT%" mkdir "%OUT%"
if /i "%XRT_LIB:~-4%"==".dll" (
    rem An import library from the installed DLL: its exported names (MSVC-mangled C++) into a .def, then lib.exe.
    echo making an import library from %XRT_LIB%
    dumpbin /nologo /exports "%XRT_LIB%" > "%OUT%\exports.txt" || exit /b 1
    powershell -NoProfile -ExecutionPolicy Bypass -File "%HERE%exports-to-def.ps1" "%OUT%\exports.txt" xrt_coreutil.dll "%OUT%\xrt_coreutil.def" || exit /b 1
    lib /nologo /machine:x64 /def:"%OUT%\xrt_coreutil.def" /out:"%OUT%\xrt_coreutil.lib" || exit /b 1
    set "XRT_LIB=%OUT%\xrt_coreutil.lib"
)

rem /MT: XRT's Windows build uses the static C runtime; /EHsc: C++ exceptions (XRT throws them), caught in every
rem function of the interface; XDNA_XRT_C_BUILD exports the interface.
cl /nologo /std:c++17 /O2 /MT /EHsc /W3 /DXDNA_XRT_C_BUILD /I"%XRT_INC%" /I"%SRC%" /LD "%SRC%\npu_xrt_c.cpp" ^
   /Fo"%OUT%\\" /Fe"%OUT%\ggml-xdna-xrt.dll" /link "%XRT_LIB%" || exit /b 1
echo built %OUT%\ggml-xdna-xrt.dll: copy it beside ggml-xdna.dll
