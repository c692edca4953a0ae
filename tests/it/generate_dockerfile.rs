//! `generate dockerfile <fbcRootDir>`: opm v1.73.0's two-stage Dockerfile, written beside the
//! directory, and opm's refusals — each with exit 1 and nothing written.

use crate::common::files_below;
use std::path::Path;

/// The Dockerfile for `builder`, `base` and directory `dir`, with `labels` already in the
/// form opm writes them (sorted, last value of a key).
fn expected(builder: &str, base: &str, dir: &str, labels: &[(&str, &str)]) -> String {
    let serve = if base == "scratch" {
        "\
# OLMv0 CatalogSources that use binary-less images must set:
# spec:
#   grpcPodConfig:
#     extractContent:
#       catalogDir: /configs
#       cacheDir: /tmp/cache
"
    } else {
        "\
# The base image is expected to contain
# /bin/opm (with serve subcommand) and /bin/grpc_health_probe

# Configure the entrypoint and command
ENTRYPOINT [\"/bin/opm\"]
CMD [\"serve\", \"/configs\", \"--cache-dir=/tmp/cache\"]
"
    };
    let mut text = format!(
        "\
# The builder image is expected to contain
# /bin/opm (with serve subcommand)
FROM {builder} as builder

# Copy FBC root into image at /configs and pre-populate serve cache
ADD {dir} /configs
RUN [\"/bin/opm\", \"serve\", \"/configs\", \"--cache-dir=/tmp/cache\", \"--cache-only\"]

FROM {base}
{serve}
COPY --from=builder /configs /configs
COPY --from=builder /tmp/cache /tmp/cache

# Set FBC-specific label for the location of the FBC root directory
# in the image
LABEL operators.operatorframework.io.index.configs.v1=/configs
"
    );
    if !labels.is_empty() {
        text.push_str("\n# Set other custom labels\n");
        for (k, v) in labels {
            text.push_str(&format!("LABEL \"{k}\"=\"{v}\"\n"));
        }
    }
    text
}

const OPM: &str = "quay.io/operator-framework/opm:latest";

/// Runs `generate dockerfile` in `cwd`: (exit code, stdout, stderr).
fn generate(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(crate::common::BIN)
        .current_dir(cwd)
        .args(["generate", "dockerfile"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("catalogs/my-catalog/pkg")).unwrap();
    std::fs::write(
        tmp.path().join("catalogs/my-catalog/pkg/catalog.json"),
        "{}",
    )
    .unwrap();
    tmp
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn writes_opms_dockerfile_beside_the_directory() {
    let tmp = workspace();
    let cwd = tmp.path();
    let written = cwd.join("catalogs/my-catalog.Dockerfile");
    // A trailing slash and `.` parts are cleaned away, as opm cleans the path.
    let (code, stdout, stderr) = generate(cwd, &["./catalogs//my-catalog/"]);
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "", ""));
    assert_eq!(read(&written), expected(OPM, OPM, "my-catalog", &[]));
    std::fs::remove_file(&written).unwrap();

    // Labels: comma-separated or repeated, CSV quoting, sorted by key, the last value wins.
    let (code, _, stderr) = generate(
        cwd,
        &[
            "catalogs/my-catalog",
            "-i",
            "registry.example.com/base:1",
            "-b",
            "registry.example.com/builder:1",
            "-l",
            "z=last,a=1",
            "--extra-labels",
            r#""list=x,y",z=later"#,
            "-l",
            "empty=",
        ],
    );
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(
        read(&written),
        expected(
            "registry.example.com/builder:1",
            "registry.example.com/base:1",
            "my-catalog",
            &[("a", "1"), ("empty", ""), ("list", "x,y"), ("z", "later")],
        )
    );
    std::fs::remove_file(&written).unwrap();

    // A scratch base: no entrypoint, a note on the CatalogSource fields instead.
    let (code, _, _) = generate(cwd, &["catalogs/my-catalog", "--base-image", "scratch"]);
    assert_eq!(code, 0);
    assert_eq!(read(&written), expected(OPM, "scratch", "my-catalog", &[]));
    std::fs::remove_file(&written).unwrap();

    // The deprecated --binary-image names the base and, without --builder-image, the builder.
    let notice = "Flag --binary-image has been deprecated, use --base-image instead\n";
    let (code, _, stderr) = generate(cwd, &["catalogs/my-catalog", "--binary-image", "bin:1"]);
    assert_eq!((code, stderr.as_str()), (0, notice));
    assert_eq!(
        read(&written),
        expected("bin:1", "bin:1", "my-catalog", &[])
    );
    std::fs::remove_file(&written).unwrap();
    let (code, _, _) = generate(
        cwd,
        &[
            "catalogs/my-catalog",
            "--binary-image",
            "bin:1",
            "-b",
            "build:1",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(
        read(&written),
        expected("build:1", "bin:1", "my-catalog", &[])
    );

    // A directory given by itself lands in the working directory.
    let (code, _, _) = generate(&cwd.join("catalogs"), &["my-catalog", "-l", "a=b"]);
    assert_eq!(code, 1, "the file written above exists");
    std::fs::remove_file(&written).unwrap();
    let (code, _, _) = generate(&cwd.join("catalogs"), &["my-catalog", "-l", "a=b"]);
    assert_eq!(code, 0);
    assert_eq!(
        read(&written),
        expected(OPM, OPM, "my-catalog", &[("a", "b")])
    );
}

#[test]
fn refuses_what_opm_refuses_and_writes_nothing() {
    let tmp = workspace();
    let cwd = tmp.path();
    std::fs::write(cwd.join("plain-file"), "x").unwrap();
    let before = files_below(cwd);
    let refused = |args: &[&str], message: &str| {
        let (code, stdout, stderr) = generate(cwd, args);
        let stderr = stderr.replace(
            "Flag --binary-image has been deprecated, use --base-image instead\n",
            "",
        );
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (1, "", format!("error: {message}\n").as_str()),
            "{args:?}"
        );
        assert_eq!(files_below(cwd), before, "{args:?}");
    };
    let dir = "catalogs/my-catalog";
    refused(
        &[dir, "--binary-image", "a", "--base-image", "b"],
        "if any flags in the group [binary-image base-image] are set none of the others can be; [base-image binary-image] were all set",
    );
    refused(
        &[dir, "-b", "scratch"],
        "invalid builder image: \"scratch\"",
    );
    refused(&[dir, "-l", "novalue"], "invalid label \"novalue\"");
    refused(&[dir, "-l", "a=b,"], "invalid label \"\"");
    refused(
        &[dir, "-l", r#"a"b=c"#],
        r#"invalid argument "a\"b=c" for "-l, --extra-labels" flag: parse error on line 1, column 1: bare " in non-quoted-field"#,
    );
    refused(
        &["catalogs/missing"],
        "stat catalogs/missing: no such file or directory",
    );
    refused(
        &["plain-file"],
        "provided root path \"plain-file\" is not a directory",
    );
    refused(&[dir, "-i", ""], "base image is unset");
    // Beyond opm, which writes these Dockerfiles although none of them can be built: a
    // builder that cannot run /bin/opm, and a label that would start a new instruction.
    refused(
        &[dir, "--binary-image", "scratch"],
        "invalid builder image: \"scratch\" (--binary-image without --builder-image names the builder too)",
    );
    refused(&[dir, "-b", ""], "builder image is unset");
    refused(
        &[dir, "-l", "\"a=b\nRUN x\""],
        "invalid label \"a=b\\nRUN x\": a label cannot hold a line break",
    );

    // An existing Dockerfile is never overwritten, nor a link followed (opm writes through a
    // dangling one).
    let target = cwd.join("catalogs/my-catalog.Dockerfile");
    std::fs::write(&target, "mine").unwrap();
    let before = files_below(cwd);
    let (code, _, stderr) = generate(cwd, &[dir]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "error: path \"catalogs/my-catalog.Dockerfile\": file already exists\n"
        )
    );
    assert_eq!(read(&target), "mine");
    std::fs::remove_file(&target).unwrap();
    std::os::unix::fs::symlink(cwd.join("elsewhere"), &target).unwrap();
    let (code, _, _) = generate(cwd, &[dir]);
    assert_eq!(code, 1);
    assert!(!cwd.join("elsewhere").exists());
    assert_eq!(files_below(cwd), before);
}
