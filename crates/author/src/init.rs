//! `init`: the `olm.package` document a new catalog starts from, with its description and icon
//! read from files. The icon is accepted only when its first bytes say it is an image, judged
//! by the magic numbers opm judges by (h2non/filetype v1.1.3, which opm v1.73.0 uses), so that
//! an icon opm refuses is refused here too, with the same words.
use super::Error;
use base64::Engine;
use catalog::quote::go_quote;
use catalog::{DeclarativeConfig, Icon, Package};
use std::io::Read;
use std::path::Path;

/// The most bytes read from a description or icon file: far above any README or icon, and a
/// bound for a name like /dev/zero that would otherwise be read for ever.
const MAX_FILE: u64 = 64 << 20;

/// What `init` is asked for.
pub struct InitRequest<'a> {
    pub package: &'a str,
    pub default_channel: &'a str,
    /// A file whose contents become the description.
    pub description: Option<&'a Path>,
    /// An image file that becomes the icon.
    pub icon: Option<&'a Path>,
}

/// The catalog holding the one `olm.package` document `request` describes. The files are
/// opened (icon first) before either is read, as opm does, so a request with two bad files
/// fails on the same one.
pub fn init_package(request: &InitRequest) -> Result<DeclarativeConfig, Error> {
    let icon = request
        .icon
        .map(|p| open(p).map_err(|e| Error::Invalid(format!("open icon file: {e}"))))
        .transpose()?;
    let description = request
        .description
        .map(|p| open(p).map_err(|e| Error::Invalid(format!("open description file: {e}"))))
        .transpose()?;
    let mut package = Package {
        name: request.package.to_owned(),
        default_channel: request.default_channel.to_owned(),
        ..Package::default()
    };
    if let Some((file, path)) = description {
        let data =
            read(file, path).map_err(|e| Error::Invalid(format!("read description: {e}")))?;
        package.description = lossy_like_go(&data);
    }
    if let Some((file, path)) = icon {
        let data = read(file, path).map_err(|e| Error::Invalid(format!("read icon: {e}")))?;
        if data.is_empty() {
            // filetype's error for an empty buffer.
            return Err(Error::Invalid(
                "detect icon mediatype: Empty buffer".to_owned(),
            ));
        }
        let media_type = sniff(&data);
        if !media_type.starts_with("image/") {
            return Err(Error::Invalid(format!(
                "detected invalid type {}: not an image",
                go_quote(media_type)
            )));
        }
        package.icon = Some(Icon {
            base64data: base64::engine::general_purpose::STANDARD.encode(&data),
            mediatype: media_type.to_owned(),
        });
    }
    Ok(DeclarativeConfig {
        packages: vec![package],
        ..DeclarativeConfig::default()
    })
}

fn open(path: &Path) -> Result<(std::fs::File, &Path), String> {
    std::fs::File::open(path)
        .map(|f| (f, path))
        .map_err(|e| format!("open {}: {}", path.display(), go_io_error(&e)))
}

fn read(file: std::fs::File, path: &Path) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("read {}: {}", path.display(), go_io_error(&e)))?;
    if data.len() as u64 > MAX_FILE {
        return Err(format!(
            "{}: larger than {MAX_FILE} bytes, the most read from it",
            path.display()
        ));
    }
    Ok(data)
}

/// An OS error as Go words it (`no such file or directory`): the C library's text, which Go's
/// table copies, with its first letter in lower case and without Rust's `(os error N)`.
pub(crate) fn go_io_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => &text[..i],
        _ => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Bytes as the text Go's JSON encoder writes for them: every byte of an invalid UTF-8
/// sequence becomes one U+FFFD (Rust's lossy conversion would merge some into one).
fn lossy_like_go(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len());
    for chunk in data.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    out
}

/// The media type filetype v1.1.3 gives `data`: "" when it knows no type for it.
///
/// filetype tries its application types, then images, then video, audio, fonts, documents
/// and archives. No application magic number starts like an image's, and no two image
/// types share one, so the image types below decide exactly what is accepted as an icon.
/// Of the other types only a few unambiguous ones are named, so that the refusal of such a
/// file says what it is; any other non-image is refused as "" (what filetype says of text,
/// SVG included), where opm may name one of the formats it knows.
pub fn sniff(data: &[u8]) -> &'static str {
    let at = |offset: usize, magic: &[u8]| data.get(offset..offset + magic.len()) == Some(magic);
    let tiff = data.len() > 10 && (at(0, b"II*\0") || at(0, b"MM\0*"));
    let cr2 = tiff && at(8, b"CR\x02");
    let image = if data.len() > 2 && at(0, b"\xFF\xD8\xFF") {
        "image/jpeg"
    } else if data.len() > 12 && at(0, b"\0\0\0\x0CjP  \r\n\x87\n\0") {
        "image/jp2"
    } else if data.len() > 3 && at(0, b"\x89PNG") {
        "image/png"
    } else if data.len() > 2 && at(0, b"GIF") {
        "image/gif"
    } else if data.len() > 11 && at(8, b"WEBP") {
        "image/webp"
    } else if cr2 {
        "image/x-canon-cr2"
    } else if tiff {
        "image/tiff"
    } else if data.len() > 1 && at(0, b"BM") {
        "image/bmp"
    } else if data.len() > 2 && at(0, b"II\xBC") {
        "image/vnd.ms-photo"
    } else if data.len() > 3 && at(0, b"8BPS") {
        "image/vnd.adobe.photoshop"
    } else if data.len() > 3 && at(0, b"\0\0\x01\0") {
        "image/vnd.microsoft.icon"
    } else if heif(data) {
        "image/heif"
    } else if data.len() > 3 && at(0, b"AC10") {
        "image/vnd.dwg"
    } else {
        ""
    };
    if !image.is_empty() {
        return image;
    }
    if at(0, b"%PDF") {
        "application/pdf"
    } else if at(0, b"\x1F\x8B\x08") {
        "application/gzip"
    } else if at(0, b"\xFD7zXZ\0") {
        "application/x-xz"
    } else if data.len() > 52 && at(0, b"\x7FELF") {
        "application/x-executable"
    } else if at(0, b"SQLi") {
        "application/vnd.sqlite3"
    } else {
        ""
    }
}

/// An ISO base media file whose `ftyp` box names HEIC as its major brand, or as a
/// compatible brand of a `mif1`/`msf1` file.
fn heif(data: &[u8]) -> bool {
    if data.len() < 16 || &data[4..8] != b"ftyp" {
        return false;
    }
    let box_len = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
    if data.len() < box_len {
        return false;
    }
    if data.len() < 17 {
        return false;
    }
    let major = &data[8..12];
    if major == b"heic" {
        return true;
    }
    if major != b"mif1" && major != b"msf1" {
        return false;
    }
    (16..box_len)
        .step_by(4)
        .filter_map(|i| data.get(i..i + 4))
        .any(|brand| brand == b"heic")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_told_by_their_magic_numbers() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n"), "image/png");
        assert_eq!(sniff(b"GIF89a"), "image/gif");
        assert_eq!(sniff(b"\xFF\xD8\xFF\xE0"), "image/jpeg");
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), "image/webp");
        assert_eq!(sniff(b"II*\0\x08\0\0\0CR\x02\0"), "image/x-canon-cr2");
        assert_eq!(sniff(b"II*\0\x08\0\0\0\0\0\0\0"), "image/tiff");
        assert_eq!(sniff(b"\0\0\x01\0\x01\0"), "image/vnd.microsoft.icon");
        assert_eq!(sniff(b"BM"), "image/bmp");
        // filetype's checks are by length too: two bytes are not yet a GIF.
        assert_eq!(sniff(b"GI"), "");
        let mut heic = b"\0\0\0\x18ftypmif1\0\0\0\0mif1heic".to_vec();
        assert_eq!(sniff(&heic), "image/heif");
        heic[20..24].copy_from_slice(b"avif");
        assert_eq!(sniff(&heic), "");
    }

    #[test]
    fn other_files_are_not_images() {
        assert_eq!(sniff(b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), "");
        assert_eq!(sniff(b"%PDF-1.4"), "application/pdf");
        assert_eq!(sniff(b"hello"), "");
    }

    #[test]
    fn invalid_utf8_becomes_one_replacement_per_byte() {
        assert_eq!(
            lossy_like_go(b"a\xE2\x82b\xFF"),
            "a\u{FFFD}\u{FFFD}b\u{FFFD}"
        );
    }
}
