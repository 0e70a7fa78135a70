"""/proc/cpuinfo texts of the CPU kinds the tests mock (one per profile the tables key by)."""

AMD_AVX2 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n"
XEON_SPR = "processor\t: 0\nflags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
AVX512_VNNI = "processor\t: 0\nflags\t\t: avx2 avx512f avx512bw avx512_vnni\n"
GRAVITON3 = "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n"
