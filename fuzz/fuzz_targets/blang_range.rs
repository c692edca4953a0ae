//! blang versions and ranges (olm.package.required, skipRange): `RANGE\nVERSION`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use catalog::semver::{Range, Version, validate_range};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (range, version) = text.split_once('\n').unwrap_or((text, "1.0.0"));
    let _ = validate_range(range);
    let _ = Version::parse(version);
    if let (Ok(r), Ok(v)) = (Range::parse(range), Version::parse_tolerant(version)) {
        let _ = r.contains(&v);
    }
});
