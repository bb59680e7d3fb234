#include "backends/cuda/module_symbols.hpp"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>

namespace kreplay::cuda {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

Result<ModuleSymbols> read_module_symbols(std::span<const std::byte> cubin) {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
  if (cubin.size() < 16 || std::memcmp(cubin.data(), ELFMAG, SELFMAG) != 0) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "module image is not an ELF cubin");
  }
  // libelf wants a mutable buffer; it does not write to it with ELF_C_READ_MMAP semantics.
  Elf* elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(cubin.data())),  // NOLINT
                        cubin.size());
  if (elf == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 std::string("cannot read cubin: ") + elf_errmsg(-1));
  }
  ModuleSymbols out;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
    elf_end(elf);
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "cubin has no section name table");
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || shdr.sh_entsize == 0) continue;
    size_t count = shdr.sh_size / shdr.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (name != nullptr && sym.st_shndx == SHN_UNDEF && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
          (std::strcmp(name, "malloc") == 0 || std::strcmp(name, "free") == 0)) {
        out.uses_device_heap = true;
        continue;
      }
      if (name == nullptr || name[0] == 0 || sym.st_shndx == SHN_UNDEF ||
          sym.st_shndx >= SHN_LORESERVE)
        continue;
      Elf_Scn* target = elf_getscn(elf, sym.st_shndx);
      GElf_Shdr tsh;
      if (target == nullptr || gelf_getshdr(target, &tsh) == nullptr) continue;
      const char* sec = elf_strptr(elf, shstrndx, tsh.sh_name);
      std::string_view section = sec ? sec : "";
      int type = GELF_ST_TYPE(sym.st_info);
      if (type == STT_FUNC && starts_with(section, ".text.") &&
          GELF_ST_BIND(sym.st_info) == STB_GLOBAL) {
        out.kernels.emplace_back(name);
      } else if (type == STT_OBJECT && sym.st_size > 0 &&
                 (starts_with(section, ".nv.global") || section.find("managed") != std::string_view::npos)) {
        ModuleSymbols::Variable v;
        v.name = name;
        v.size = sym.st_size;
        // nvcc marks __managed__ variables with bit 2 of st_other (seen with CUDA 13.0).
        v.managed = section.find("managed") != std::string_view::npos || (sym.st_other & 0x4) != 0;
        out.variables.push_back(std::move(v));
      }
    }
  }
  elf_end(elf);
  std::sort(out.kernels.begin(), out.kernels.end());
  out.kernels.erase(std::unique(out.kernels.begin(), out.kernels.end()), out.kernels.end());
  return out;
}

}  // namespace kreplay::cuda
