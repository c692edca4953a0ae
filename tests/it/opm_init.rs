//! `init <package>`: the olm.package document opm writes (the expected texts are what opm
//! v1.26.4 prints for the same flags; `init` is unchanged from it to v1.73.0), and opm's
//! refusals, each with exit 1 and nothing on stdout.

use crate::common::run;
use std::path::Path;

/// A PNG signature and four bytes: all opm's sniffing looks at.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n0000";

fn file(dir: &Path, name: &str, data: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path.to_str().unwrap().to_owned()
}

fn ok(args: &[&str]) -> String {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!((code, stderr.as_str()), (0, ""), "{all:?}");
    stdout
}

fn refused(args: &[&str], message: &str) {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    assert_eq!(
        run(&all),
        (1, String::new(), format!("error: {message}\n")),
        "{all:?}"
    );
}

#[test]
fn writes_the_package_document_as_opm_does() {
    let tmp = tempfile::tempdir().unwrap();
    let icon = file(tmp.path(), "icon.png", PNG);
    let readme = file(tmp.path(), "README.md", b"# Foo\n\nDoes \"things\".\n");
    assert_eq!(
        ok(&["foo"]),
        "{\n    \"schema\": \"olm.package\",\n    \"name\": \"foo\",\n    \"defaultChannel\": \"\"\n}\n"
    );
    assert_eq!(
        ok(&["foo", "-c", "stable", "-i", &icon, "-d", &readme]),
        r##"{
    "schema": "olm.package",
    "name": "foo",
    "defaultChannel": "stable",
    "icon": {
        "base64data": "iVBORw0KGgowMDAw",
        "mediatype": "image/png"
    },
    "description": "# Foo\n\nDoes \"things\".\n"
}
"##
    );
    assert_eq!(
        ok(&[
            "foo",
            "--output",
            "yaml",
            "--icon",
            &icon,
            "--description",
            &readme
        ]),
        "---\ndefaultChannel: \"\"\ndescription: |\n  # Foo\n\n  Does \"things\".\nicon:\n  base64data: iVBORw0KGgowMDAw\n  mediatype: image/png\nname: foo\nschema: olm.package\n"
    );
    // What opm's sniffing takes for an image is an image, whatever the file's name.
    let gif = file(tmp.path(), "logo.svg", b"GIF89a");
    assert!(
        ok(&["foo", "-i", &gif])
            .contains("\"base64data\": \"R0lGODlh\",\n        \"mediatype\": \"image/gif\""),
    );
    // The document is what validate and render read as the package (here without channels).
    let catalog = tmp.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    std::fs::write(catalog.join("foo.json"), ok(&["foo", "-i", &icon])).unwrap();
    let (code, rendered, _) = run(&["render", catalog.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(rendered, ok(&["foo", "-i", &icon]));
}

#[test]
fn refuses_what_opm_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let text = file(tmp.path(), "notes.txt", b"hello\n");
    let svg = file(
        tmp.path(),
        "icon.svg",
        br#"<svg xmlns="http://www.w3.org/2000/svg"/>"#,
    );
    let pdf = file(tmp.path(), "icon.pdf", b"%PDF-1.4\n");
    let empty = file(tmp.path(), "empty.png", b"");
    let icon = file(tmp.path(), "icon.png", PNG);
    let missing = tmp.path().join("missing").to_str().unwrap().to_owned();
    refused(
        &["foo", "-o", "xml"],
        "invalid --output value \"xml\", expected (json|yaml)",
    );
    refused(
        &["foo", "-i", &text],
        "detected invalid type \"\": not an image",
    );
    refused(
        &["foo", "-i", &svg],
        "detected invalid type \"\": not an image",
    );
    refused(
        &["foo", "-i", &pdf],
        "detected invalid type \"application/pdf\": not an image",
    );
    refused(
        &["foo", "-i", &empty],
        "detect icon mediatype: Empty buffer",
    );
    refused(
        &["foo", "-i", &missing],
        &format!("open icon file: open {missing}: no such file or directory"),
    );
    refused(
        &["foo", "-i", &icon, "-d", &missing],
        &format!("open description file: open {missing}: no such file or directory"),
    );
    // Both files bad: the icon is opened first.
    refused(
        &["foo", "-i", &missing, "-d", &missing],
        &format!("open icon file: open {missing}: no such file or directory"),
    );
    let dir = tmp.path().to_str().unwrap();
    refused(
        &["foo", "-d", dir],
        &format!("read description: read {dir}: is a directory"),
    );
}
