# The exported names of a DLL, from "dumpbin /exports" output, as a module-definition (.def) file for lib.exe: the
# lines of dumpbin's table are "ordinal hint RVA name" (a forwarded export has no RVA and is skipped).
# usage: exports-to-def.ps1 EXPORTS_TXT DLL_NAME DEF_OUT
param([string]$exports, [string]$dll, [string]$def)
$names = Get-Content $exports | ForEach-Object {
    if ($_ -match '^\s+\d+\s+[0-9A-Fa-f]+\s+[0-9A-Fa-f]{8}\s+(\S+)') { $Matches[1] }
}
if (-not $names) { Write-Error "no exports found in $exports"; exit 1 }
@("LIBRARY $dll", "EXPORTS") + ($names | ForEach-Object { "    $_" }) | Set-Content -Encoding ascii $def
Write-Output "$($names.Count) exports of $dll written to $def"
