//! `generate dockerfile`: the Dockerfile that builds a catalog image from an FBC directory, as
//! opm v1.73.0 writes it — a builder stage that pre-builds the serving cache with
//! `/bin/opm serve --cache-only`, and a final stage that serves it (or, on `scratch`, only
//! holds it for OLM to extract) — beside the directory, as `<dir>.Dockerfile`.
//!
//! The checks, and their order, are opm's, so that a command opm refuses is refused here with
//! the same message; unlike opm, every check runs before the file is created, so a refusal
//! writes nothing.
use super::Error;
use super::init::go_io_error;
use catalog::quote::go_quote;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// opm's default builder and base image. No olm-registry image is published; ours serves from
/// any image that has it at `/bin/opm` (see `build catalog --server`).
pub const DEFAULT_IMAGE: &str = "quay.io/operator-framework/opm:latest";

/// The label naming the catalog's directory in the image.
const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// What `generate dockerfile` is asked for: the flags as given (`None`: not on the command
/// line, which matters for `--binary-image`).
#[derive(Clone, Debug, Default)]
pub struct DockerfileRequest {
    /// The FBC root directory, as given.
    pub root: String,
    pub base_image: Option<String>,
    /// opm's deprecated name for the base image; it also sets the builder when
    /// `builder_image` is not given.
    pub binary_image: Option<String>,
    pub builder_image: Option<String>,
    /// Each `-l` value as given: `key=value` items, comma-separated (CSV quoting allowed).
    pub extra_labels: Vec<String>,
}

/// Writes the Dockerfile `request` describes and returns its path.
pub fn generate_dockerfile(request: &DockerfileRequest) -> Result<PathBuf, Error> {
    let (path, text) = plan(request)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::Invalid(file_error(&path, &e)))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        // A half-written Dockerfile would make the next run fail as "already exists".
        drop(file);
        let _ = std::fs::remove_file(&path);
        return Err(Error::Invalid(format!(
            "write {}: {}",
            path.display(),
            go_io_error(&e)
        )));
    }
    Ok(path)
}

/// The path and text of the Dockerfile, after every check opm makes (in its order) and the
/// few it does not make that keep a broken Dockerfile from being written.
fn plan(request: &DockerfileRequest) -> Result<(PathBuf, String), Error> {
    let invalid = |m: String| Error::Invalid(m);
    // Flag values first, as opm's flag parser reads them before anything else.
    let mut items = Vec::new();
    for value in &request.extra_labels {
        items.extend(csv_record(value).map_err(|e| {
            invalid(format!(
                "invalid argument {} for \"-l, --extra-labels\" flag: {e}",
                go_quote(value)
            ))
        })?);
    }
    if request.binary_image.is_some() && request.base_image.is_some() {
        return Err(invalid(
            "if any flags in the group [binary-image base-image] are set none of the others can be; [base-image binary-image] were all set".to_owned(),
        ));
    }
    let base = request
        .base_image
        .clone()
        .or_else(|| request.binary_image.clone())
        .unwrap_or_else(|| DEFAULT_IMAGE.to_owned());
    if request.builder_image.as_deref() == Some("scratch") {
        return Err(invalid(format!(
            "invalid builder image: {}",
            go_quote("scratch")
        )));
    }
    // opm: --binary-image without --builder-image names the builder too (its old meaning).
    let builder = match (&request.builder_image, &request.binary_image) {
        (Some(b), _) => b.clone(),
        (None, Some(binary)) => binary.clone(),
        (None, None) => DEFAULT_IMAGE.to_owned(),
    };
    let labels = parse_labels(&items)?;
    let root = go_clean(&request.root);
    let (parent, name) = match root.rfind('/') {
        Some(i) => root.split_at(i + 1),
        None => ("", root.as_str()),
    };
    let dockerfile = if parent.is_empty() {
        format!("{name}.Dockerfile")
    } else {
        go_clean(&format!("{parent}{name}.Dockerfile"))
    };
    let path = PathBuf::from(&dockerfile);
    match std::fs::symlink_metadata(&path) {
        // Anything at the path counts, a dangling link too: opm would write through it.
        Ok(_) => {
            return Err(invalid(format!(
                "path {}: file already exists",
                go_quote(&dockerfile)
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(invalid(format!("stat {dockerfile}: {}", go_io_error(&e)))),
    }
    match std::fs::metadata(Path::new(&root)) {
        Err(e) => return Err(invalid(format!("stat {root}: {}", go_io_error(&e)))),
        Ok(m) if !m.is_dir() => {
            return Err(invalid(format!(
                "provided root path {} is not a directory",
                go_quote(&root)
            )));
        }
        Ok(_) => {}
    }
    if base.is_empty() {
        return Err(invalid("base image is unset".to_owned()));
    }
    if name.is_empty() {
        return Err(invalid("index directory is unset".to_owned()));
    }
    // Beyond opm, which writes these Dockerfiles although no build of them can work: a
    // builder stage must run /bin/opm, so it can be neither empty nor `scratch` (which
    // `--binary-image scratch` alone makes it).
    if builder.is_empty() {
        return Err(invalid("builder image is unset".to_owned()));
    }
    if builder == "scratch" {
        return Err(invalid(format!(
            "invalid builder image: {} (--binary-image without --builder-image names the builder too)",
            go_quote("scratch")
        )));
    }
    Ok((path, dockerfile_text(&builder, &base, name, &labels)))
}

/// `key=value` items as a map (a later key wins). Beyond opm: a line break in an item is
/// refused, since it would end the LABEL instruction and start another one.
fn parse_labels(items: &[String]) -> Result<BTreeMap<String, String>, Error> {
    let mut labels = BTreeMap::new();
    for item in items {
        let Some((key, value)) = item.split_once('=') else {
            return Err(Error::Invalid(format!("invalid label {}", go_quote(item))));
        };
        if item.contains(['\n', '\r']) {
            return Err(Error::Invalid(format!(
                "invalid label {}: a label cannot hold a line break",
                go_quote(item)
            )));
        }
        labels.insert(key.to_owned(), value.to_owned());
    }
    Ok(labels)
}

/// The Dockerfile, line for line as opm's template makes it; labels in key order.
pub fn dockerfile_text(
    builder: &str,
    base: &str,
    index_dir: &str,
    labels: &BTreeMap<String, String>,
) -> String {
    let mut out = format!(
        "# The builder image is expected to contain\n\
         # /bin/opm (with serve subcommand)\n\
         FROM {builder} as builder\n\
         \n\
         # Copy FBC root into image at /configs and pre-populate serve cache\n\
         ADD {index_dir} /configs\n\
         RUN [\"/bin/opm\", \"serve\", \"/configs\", \"--cache-dir=/tmp/cache\", \"--cache-only\"]\n\
         \n\
         FROM {base}\n"
    );
    if base == "scratch" {
        out.push_str(
            "# OLMv0 CatalogSources that use binary-less images must set:\n\
             # spec:\n\
             #   grpcPodConfig:\n\
             #     extractContent:\n\
             #       catalogDir: /configs\n\
             #       cacheDir: /tmp/cache\n",
        );
    } else {
        out.push_str(
            "# The base image is expected to contain\n\
             # /bin/opm (with serve subcommand) and /bin/grpc_health_probe\n\
             \n\
             # Configure the entrypoint and command\n\
             ENTRYPOINT [\"/bin/opm\"]\n\
             CMD [\"serve\", \"/configs\", \"--cache-dir=/tmp/cache\"]\n",
        );
    }
    out.push_str(
        "\n\
         COPY --from=builder /configs /configs\n\
         COPY --from=builder /tmp/cache /tmp/cache\n\
         \n\
         # Set FBC-specific label for the location of the FBC root directory\n\
         # in the image\n",
    );
    out.push_str(&format!("LABEL {CONFIGS_LABEL}=/configs\n"));
    if !labels.is_empty() {
        out.push_str("\n# Set other custom labels\n");
        for (key, value) in labels {
            out.push_str(&format!("LABEL \"{key}\"=\"{value}\"\n"));
        }
    }
    out
}

/// Go's `filepath.Clean`: the shortest path naming the same file by lexical processing alone
/// (opm names the Dockerfile and the ADD directory after the cleaned path).
fn go_clean(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                // `..` above the root is the root; above a relative start it stays.
                _ if rooted => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// One record of Go's CSV reader, which opm's flag parser reads each `-l` value with: fields
/// split at commas, a field in double quotes may hold commas and `""` for a quote. Reading
/// stops at the end of the first non-empty line. Errors are Go's, with its line and column.
fn csv_record(value: &str) -> Result<Vec<String>, String> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    // Go reads line by line (`\r\n` read as `\n`), skipping empty lines before the record.
    let mut normalized = value.replace("\r\n", "\n");
    if normalized.ends_with('\r') {
        // Go drops a carriage return that ends the input.
        normalized.pop();
    }
    let mut lines = normalized.split_inclusive('\n');
    let mut number = 0;
    let mut line = loop {
        let Some(l) = lines.next() else {
            // Only empty lines: Go's reader reports the end of its input.
            return Err("EOF".to_owned());
        };
        number += 1;
        if l != "\n" {
            break l;
        }
    };
    let start_line = number;
    let mut full = line;
    let mut fields = Vec::new();
    let error = |number: usize, column: usize, what: &str| {
        if number == start_line {
            format!("parse error on line {number}, column {column}: {what}")
        } else {
            format!(
                "record on line {start_line}; parse error on line {number}, column {column}: {what}"
            )
        }
    };
    let runes = |s: &str| s.chars().count();
    const BARE: &str = "bare \" in non-quoted-field";
    const QUOTE: &str = "extraneous or missing \" in quoted-field";
    loop {
        if !line.starts_with('"') {
            let (field, rest) = match line.find(',') {
                Some(i) => (&line[..i], Some(&line[i + 1..])),
                None => (line.strip_suffix('\n').unwrap_or(line), None),
            };
            if let Some(j) = field.find('"') {
                let consumed = full.len() - (line.len() - j);
                return Err(error(number, runes(&full[..consumed]), BARE));
            }
            fields.push(field.to_owned());
            match rest {
                Some(rest) => line = rest,
                None => return Ok(fields),
            }
            continue;
        }
        // A quoted field, which may run over line ends.
        line = &line[1..];
        let mut field = String::new();
        loop {
            if let Some(i) = line.find('"') {
                field.push_str(&line[..i]);
                line = &line[i + 1..];
                if line.starts_with('"') {
                    field.push('"');
                    line = &line[1..];
                } else if line.starts_with(',') {
                    line = &line[1..];
                    fields.push(std::mem::take(&mut field));
                    break;
                } else if line.is_empty() || line == "\n" {
                    fields.push(field);
                    return Ok(fields);
                } else {
                    let consumed = full.len() - line.len() - 1;
                    return Err(error(number, runes(&full[..consumed]), QUOTE));
                }
            } else if !line.is_empty() {
                field.push_str(line);
                // Go reads on; past the end it reads an empty line, counted all the same.
                number += 1;
                line = lines.next().unwrap_or("");
                full = line;
            } else {
                return Err(error(number, runes(full), QUOTE));
            }
        }
    }
}

fn file_error(path: &Path, e: &std::io::Error) -> String {
    format!("open {}: {}", path.display(), go_io_error(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_as_go_cleans_them() {
        for (given, clean) in [
            ("", "."),
            (".", "."),
            ("catalog/", "catalog"),
            ("./a//b/../c", "a/c"),
            ("../x", "../x"),
            ("a/../..", ".."),
            ("/..", "/"),
            ("//a/", "/a"),
        ] {
            assert_eq!(go_clean(given), clean, "{given:?}");
        }
    }

    #[test]
    fn label_values_are_read_as_one_csv_record() {
        let ok = |v: &str| csv_record(v).unwrap();
        assert_eq!(ok("a=b,c=d"), ["a=b", "c=d"]);
        assert_eq!(ok(r#""a=b,c",d=e"#), ["a=b,c", "d=e"]);
        assert_eq!(ok(r#""say ""hi""=x""#), [r#"say "hi"=x"#]);
        assert_eq!(ok("a=b,"), ["a=b", ""]);
        assert_eq!(ok("a=b\nc=d"), ["a=b"]);
        assert_eq!(ok("\n\na=b"), ["a=b"]);
        assert_eq!(ok(""), Vec::<String>::new());
        assert_eq!(
            csv_record(r#"a"b=c"#).unwrap_err(),
            "parse error on line 1, column 1: bare \" in non-quoted-field"
        );
        assert_eq!(
            csv_record("\"a=b").unwrap_err(),
            "record on line 1; parse error on line 2, column 0: extraneous or missing \" in quoted-field"
        );
        assert_eq!(ok("\"a=b\nc\",d=e"), ["a=b\nc", "d=e"]);
        assert_eq!(
            csv_record(r#""a"b"#).unwrap_err(),
            "parse error on line 1, column 2: extraneous or missing \" in quoted-field"
        );
    }
}
