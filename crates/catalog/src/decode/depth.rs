//! How deep libyaml would nest a document, found before serde_yaml reads it.
//!
//! libyaml's scanner walks every open flow collection for each token, so a document of deep
//! flow collections takes quadratic time (100,000 levels over many lines: minutes) before
//! serde_yaml's own depth check ever runs. Following libyaml's events here stops at
//! [`MAX_DEPTH`] instead, having done bounded work.
use super::MAX_DEPTH;
use std::mem::MaybeUninit;
use unsafe_libyaml::{
    YAML_DOCUMENT_END_EVENT, YAML_MAPPING_END_EVENT, YAML_MAPPING_START_EVENT,
    YAML_SEQUENCE_END_EVENT, YAML_SEQUENCE_START_EVENT, YAML_STREAM_END_EVENT, yaml_event_delete,
    yaml_event_t, yaml_parser_delete, yaml_parser_initialize, yaml_parser_parse,
    yaml_parser_set_input_string, yaml_parser_t,
};

/// The 0-based line of `doc` on which its first document opens a collection deeper than
/// [`MAX_DEPTH`], or `None` if it does not (or is not valid YAML before that: serde_yaml then
/// says why).
pub(super) fn too_deep_line(doc: &[u8]) -> Option<usize> {
    let mut parser = MaybeUninit::<yaml_parser_t>::uninit();
    let mut event = MaybeUninit::<yaml_event_t>::uninit();
    // SAFETY: the parser is initialised before any other call and deleted exactly once; the
    // input `doc` outlives it; each event is read only after a successful parse and deleted
    // before the next.
    unsafe {
        if !yaml_parser_initialize(parser.as_mut_ptr()).ok {
            return None;
        }
        let parser = parser.as_mut_ptr();
        yaml_parser_set_input_string(parser, doc.as_ptr(), doc.len() as _);
        let mut depth = 0usize;
        let mut found = None;
        while yaml_parser_parse(parser, event.as_mut_ptr()).ok {
            let e = event.as_mut_ptr();
            let (kind, line) = ((*e).type_, (*e).start_mark.line);
            yaml_event_delete(e);
            match kind {
                YAML_SEQUENCE_START_EVENT | YAML_MAPPING_START_EVENT => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        found = Some(line as usize);
                        break;
                    }
                }
                YAML_SEQUENCE_END_EVENT | YAML_MAPPING_END_EVENT => depth -= 1,
                YAML_DOCUMENT_END_EVENT | YAML_STREAM_END_EVENT => break,
                _ => {}
            }
        }
        yaml_parser_delete(parser);
        found
    }
}
