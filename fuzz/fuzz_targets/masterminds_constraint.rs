//! Masterminds constraints (OLM v1 `version`): `CONSTRAINT\nVERSION`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use catalog::semver::Version;
use catalog::version_constraint::VersionConstraint;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (constraint, version) = text.split_once('\n').unwrap_or((text, "1.0.0"));
    let _ = VersionConstraint::admit(constraint);
    if let (Ok(c), Ok(v)) = (
        VersionConstraint::parse(constraint),
        Version::parse_tolerant(version),
    ) {
        let _ = c.matches(&v);
    }
});
