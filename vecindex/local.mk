# vecindex/: the vector index on a plain memory range (flat or HNSW). A
# convenience library of its own, since it depends on nothing else here:
# libpool lays indexes out in regions with it, poold searches them with it
# near their data, the unit tests use it on malloc'd memory. The distance
# kernels are one file per instruction-set family.
noinst_LTLIBRARIES += vecindex/libvecindex.la
vecindex_libvecindex_la_SOURCES = vecindex/vecindex.h vecindex/vecindex.c vecindex/vecdist.h
if HOST_X86_64
vecindex_libvecindex_la_SOURCES += vecindex/vecdist_x86.c
else
vecindex_libvecindex_la_SOURCES += vecindex/vecdist_generic.c
endif
vecindex_libvecindex_la_LIBADD = $(LIBM)
