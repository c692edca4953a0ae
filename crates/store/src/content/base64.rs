//! Standard base64 with padding (Go's `base64.StdEncoding`, what `olm.bundle.object` holds),
//! encoded with SIMD: the content encodes its manifests again on every read.
use base64_simd::{Out, STANDARD};

/// The length of the encoding of `n` bytes.
pub(super) fn encoded_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// Bytes encoded per step when comparing: a multiple of 3, so that the steps' encodings
/// concatenate to the whole one.
const STEP: usize = 3 << 10;

/// Whether `text` is the encoding of `bytes`, without allocating it.
pub(super) fn is_base64_of(text: &[u8], bytes: &[u8]) -> bool {
    if text.len() != encoded_len(bytes.len()) {
        return false;
    }
    let mut buf = [0u8; STEP / 3 * 4];
    bytes
        .chunks(STEP)
        .zip(text.chunks(STEP / 3 * 4))
        .all(|(chunk, expected)| {
            let len = encoded_len(chunk.len());
            STANDARD.encode(chunk, Out::from_slice(&mut buf[..len])) == expected
        })
}

/// Appends characters `from..to` of the encoding of `bytes` to `out`: only the 3-byte groups
/// that hold them are encoded.
pub(super) fn append_encoded(bytes: &[u8], from: usize, to: usize, out: &mut Vec<u8>) {
    if from >= to {
        return;
    }
    let (first, last) = (from / 4, to.div_ceil(4));
    let input = &bytes[first * 3..(last * 3).min(bytes.len())];
    let start = out.len();
    // Written straight into `out`'s spare capacity: zeroing it first cost a third as much as
    // the encoding itself (a profile of `/all`).
    STANDARD.encode_append(input, out);
    let skip = from - first * 4;
    if skip > 0 {
        out.copy_within(start + skip.., start);
    }
    out.truncate(start + (to - from));
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD as REFERENCE;

    #[test]
    fn any_slice_of_an_encoding_is_what_the_reference_encoder_gives() {
        for n in [0, 1, 2, 3, 4, 5, 3071, 3072, 3073, 10_000] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7919 % 256) as u8).collect();
            let whole = REFERENCE.encode(&bytes);
            assert_eq!(encoded_len(n), whole.len());
            assert!(is_base64_of(whole.as_bytes(), &bytes), "{n}");
            for (from, to) in [(0, whole.len()), (1, whole.len()), (0, 3), (5, 7), (6, 6)] {
                let (from, to) = (from.min(whole.len()), to.min(whole.len()));
                let mut out = b"x".to_vec();
                append_encoded(&bytes, from, to, &mut out);
                assert_eq!(&out[1..], &whole.as_bytes()[from..to], "{n} {from}..{to}");
            }
        }
    }

    #[test]
    fn only_the_exact_encoding_matches() {
        let bytes = b"{\"kind\":\"ConfigMap\"}";
        let good = REFERENCE.encode(bytes);
        assert!(is_base64_of(good.as_bytes(), bytes));
        // The same bytes, written with unused trailing bits set (Go decodes it all the same).
        let mut loose = good.clone().into_bytes();
        let last = loose.iter().rposition(|&c| c != b'=').unwrap();
        loose[last] = b'x';
        assert_eq!(REFERENCE.decode(&loose).ok(), None);
        assert!(!is_base64_of(&loose, bytes));
        assert!(!is_base64_of(good.trim_end_matches('=').as_bytes(), bytes));
        assert!(!is_base64_of(good.as_bytes(), b"{\"kind\":\"ConfigMaq\"}"));
    }
}
