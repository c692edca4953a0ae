//! FBC files read as YAML: the block reader first, libyaml for what it declines.
#![no_main]
use libfuzzer_sys::fuzz_target;
use catalog::decode::parse_documents;

fuzz_target!(|data: &[u8]| {
    // A leading `{` would send the input to the JSON reader instead.
    let starts_json = data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if starts_json {
        let _ = parse_documents("fuzz.yaml", &[b"---\n", data].concat());
    } else {
        let _ = parse_documents("fuzz.yaml", data);
    }
});
