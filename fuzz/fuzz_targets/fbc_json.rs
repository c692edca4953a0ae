//! FBC files that the loader sniffs as JSON (a stream of objects).
#![no_main]
use libfuzzer_sys::fuzz_target;
use catalog::decode::parse_documents;

fuzz_target!(|data: &[u8]| {
    // The sniff looks at the first non-blank byte: make it `{` so every input is read as JSON.
    let starts_json = data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if starts_json {
        let _ = parse_documents("fuzz.json", data);
    } else {
        let _ = parse_documents("fuzz.json", &[b"{", data].concat());
    }
});
