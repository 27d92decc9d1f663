//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <string.h>

#include "CLifecycleProcess.h"

struct build_id_search {
    unsigned char *out;
    size_t capacity;
    size_t length;
};

// Looks through the first object's PT_NOTE segments (the program itself) for the GNU build id note.
static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct build_id_search *search = data;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type != PT_NOTE) continue;
        const unsigned char *note = (const unsigned char *)(info->dlpi_addr + header->p_vaddr);
        size_t offset = 0;
        while (offset + sizeof(ElfW(Nhdr)) <= header->p_memsz) {
            ElfW(Nhdr) entry;
            memcpy(&entry, note + offset, sizeof entry);
            size_t name = offset + sizeof entry;
            size_t description = name + ((entry.n_namesz + 3) & ~(size_t)3);
            if (description + entry.n_descsz > header->p_memsz) break;
            if (entry.n_type == NT_GNU_BUILD_ID && entry.n_namesz == 4 && memcmp(note + name, "GNU", 4) == 0) {
                size_t length = entry.n_descsz < search->capacity ? entry.n_descsz : search->capacity;
                memcpy(search->out, note + description, length);
                search->length = length;
                return 1;
            }
            offset = description + ((entry.n_descsz + 3) & ~(size_t)3);
        }
    }
    // Only the first object: the program.
    return 1;
}

size_t clifecycle_build_id(unsigned char *out, size_t capacity) {
    struct build_id_search search = {out, capacity, 0};
    dl_iterate_phdr(find_build_id, &search);
    return search.length;
}
