//! Image layers (tar, plain or gzip) unpacked into a directory: nothing may land outside it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use image::unpack::{Limits, Usage, unpack_layer};

fuzz_target!(|data: &[u8]| {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let limits = Limits {
        max_bytes: 1 << 20,
        max_entries: 1000,
        ..Limits::default()
    };
    let _ = unpack_layer(data, &root, limits, &mut Usage::default());
    let beside: Vec<_> = std::fs::read_dir(base.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["root"], "a layer wrote outside the directory");
});
