//! olm.constraint property values: the JSON tree, its blang ranges and CEL rules.
#![no_main]
use libfuzzer_sys::fuzz_target;
use resolve::OlmConstraint;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = OlmConstraint::parse(text) {
        let _ = c.kind_name();
        let _ = c.to_predicate();
    }
});
