//! Pinned tracking cost per sample: one read of the mapping table (`PidMaps::read`, what
//! `provetop-maps` does for a process whose address space moved) as a function of the number of
//! mappings and of the RSS, beside the smaps pass it replaced (the cross-check now) at the same
//! RSS. The target is this process: extra one-page mappings (alternately read-only and
//! read-write, so the kernel cannot merge them) and touched anonymous memory.
//!
//! `cargo bench -p provetop-collect --bench pinned`. `PINNED_BENCH_GIB` (default "1,2,4") sets
//! the RSS steps. `cargo test` (CI) runs each routine once, criterion's test mode, at 1 GiB.

use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nix::sys::mman::{self, MapFlags, ProtFlags};
use provetop_collect::sampler::maps::PidMaps;
use provetop_collect::sampler::read_pinned;

const PAGE: usize = 4096;

/// Mappings this bench made, unmapped on drop.
struct Held(Vec<(NonNull<c_void>, usize)>);

impl Drop for Held {
    fn drop(&mut self) {
        for &(p, len) in &self.0 {
            // SAFETY: each (p, len) is a mapping made by `map` below and used by nothing else.
            let _ = unsafe { mman::munmap(p, len) };
        }
    }
}

fn map(len: usize, prot: ProtFlags) -> NonNull<c_void> {
    // SAFETY: a fresh private anonymous mapping aliases nothing.
    unsafe {
        mman::mmap_anonymous(
            None,
            NonZeroUsize::new(len).unwrap(),
            prot,
            MapFlags::MAP_PRIVATE,
        )
    }
    .expect("mmap")
}

/// `n` one-page mappings that cannot merge.
fn mappings(n: usize) -> Held {
    Held(
        (0..n)
            .map(|i| {
                let prot = if i % 2 == 0 {
                    ProtFlags::PROT_READ
                } else {
                    ProtFlags::PROT_READ | ProtFlags::PROT_WRITE
                };
                (map(PAGE, prot), PAGE)
            })
            .collect(),
    )
}

/// `gib` GiB of anonymous memory, every page written.
fn resident(gib: usize) -> Held {
    let len = gib << 30;
    let p = map(len, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE);
    let base: *mut u8 = p.as_ptr().cast();
    for off in (0..len).step_by(PAGE) {
        // SAFETY: off < len inside a writable mapping of len bytes.
        unsafe { base.add(off).write_volatile(1) };
    }
    Held(vec![(p, len)])
}

fn bench(c: &mut Criterion) {
    let me = std::process::id();
    let mut table = PidMaps::open(me).unwrap();

    let mut g = c.benchmark_group("maps read by mappings");
    for n in [100usize, 1_000, 10_000] {
        let _held = mappings(n);
        let total = table.read(None).unwrap().mappings;
        g.bench_with_input(BenchmarkId::new("mappings", total), &n, |b, _| {
            b.iter(|| table.read(None).unwrap())
        });
    }
    g.finish();

    let steps: Vec<usize> = std::env::var("PINNED_BENCH_GIB")
        .unwrap_or_else(|_| {
            let bench = std::env::args().any(|a| a == "--bench");
            if bench { "1,2,4" } else { "1" }.into()
        })
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let mut g = c.benchmark_group("per RSS");
    g.sample_size(10);
    let mut buf = Vec::new();
    for gib in steps {
        let _held = resident(gib);
        g.bench_with_input(
            BenchmarkId::new("maps read", format!("{gib}GiB")),
            &gib,
            |b, _| b.iter(|| table.read(None).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new("smaps pass", format!("{gib}GiB")),
            &gib,
            |b, _| b.iter(|| read_pinned(me, &mut buf).unwrap()),
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
