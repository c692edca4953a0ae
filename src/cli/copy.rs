//! The two small tools OLM's pods run from its utility image, so that our catalog image can be
//! that image too (`--util-image`), with nothing upstream. With
//! `grpcPodConfig.extractContent`, OLM v0.31.0's catalog operator gives the registry pod an
//! init container running `cp /bin/copy-content /utilities/copy-content` in the utility image,
//! then one running `/utilities/copy-content --catalog.from=DIR --catalog.to=DIR
//! --cache.from=DIR --cache.to=DIR` in the catalog image. For a bundle with an image, its
//! bundle unpack Job runs `/bin/cp -Rv /bin/cpb /util/cpb` in the utility image, then
//! `/util/cpb /bundle` in the bundle image (usually built on nothing: the binary must then be
//! static to run there). `main` dispatches here when invoked as `cp`, `copy-content` or `cpb`.

/// `cp [-R|-r] [-v] [-f] SOURCE... DEST`: each source (a symbolic link named on the command
/// line is followed) copied to DEST, or into it when DEST is a directory; a directory only
/// with `-R`, its links copied as links. Enough of POSIX cp for what OLM's pods run; exit 1
/// with a message naming the file on any failure.
pub fn cp(args: &[String]) -> i32 {
    let mut recursive = false;
    let mut verbose = false;
    let mut paths = Vec::new();
    for arg in args {
        match arg.strip_prefix('-').filter(|f| !f.is_empty()) {
            Some(flags) if paths.is_empty() => {
                for flag in flags.chars() {
                    match flag {
                        'R' | 'r' => recursive = true,
                        'v' => verbose = true,
                        // Overwriting is what copying here always does.
                        'f' => {}
                        other => return usage(&format!("cp: unknown option -{other}")),
                    }
                }
            }
            _ => paths.push(std::path::PathBuf::from(arg)),
        }
    }
    let Some((dest, sources)) = paths.split_last().filter(|(_, s)| !s.is_empty()) else {
        return usage("usage: cp [-R] [-v] SOURCE... DEST");
    };
    let into = dest.is_dir();
    if sources.len() > 1 && !into {
        return usage(&format!("cp: {}: not a directory", dest.display()));
    }
    for source in sources {
        let target = match (into, source.file_name()) {
            (true, Some(name)) => dest.join(name),
            _ => dest.clone(),
        };
        if source.is_dir() && !recursive {
            return usage(&format!(
                "cp: {} is a directory (not copied without -R)",
                source.display()
            ));
        }
        if let Err(e) = copy_followed(source, &target) {
            eprintln!("cp: {e}");
            return 1;
        }
        if verbose {
            println!("'{}' -> '{}'", source.display(), target.display());
        }
    }
    0
}

/// `copy-content --catalog.from=DIR --catalog.to=DIR --cache.from=DIR --cache.to=DIR` (Go's
/// flag syntax: one or two dashes, `=VALUE` or the next argument): each destination removed,
/// then its source copied there, links as links. Every flag is required, as in OLM's tool.
pub fn copy_content(args: &[String]) -> i32 {
    const FLAGS: [&str; 4] = ["catalog.from", "catalog.to", "cache.from", "cache.to"];
    let mut values: [Option<String>; 4] = Default::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let bare = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
        let Some(bare) = bare else {
            return usage(&format!("copy-content: unexpected argument {arg:?}"));
        };
        let (name, value) = match bare.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (bare, args.next().cloned()),
        };
        let Some(slot) = FLAGS.iter().position(|f| *f == name) else {
            return usage(&format!("copy-content: unknown flag -{name}"));
        };
        values[slot] = value;
    }
    let mut dirs = Vec::new();
    for (name, value) in FLAGS.iter().zip(&values) {
        match value.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => dirs.push(std::path::PathBuf::from(v)),
            None => return usage(&format!("copy-content: --{name} is required")),
        }
    }
    for pair in dirs.chunks(2) {
        let (from, to) = (&pair[0], &pair[1]);
        let removed = match std::fs::remove_dir_all(to) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        if let Err(e) = removed {
            eprintln!("copy-content: removing {}: {e}", to.display());
            return 1;
        }
        if let Err(e) = copy_followed(from, to) {
            eprintln!(
                "copy-content: copying {} to {}: {e}",
                from.display(),
                to.display()
            );
            return 1;
        }
    }
    0
}

/// `cpb [DEST]` (DEST `./bundle` when absent), run in a bundle image: copies
/// `metadata/annotations.yaml` (below the working directory, the image root in a pod) to
/// `DEST/metadata/annotations.yaml`, and the content of the manifests directory it names
/// (`operators.operatorframework.io.bundle.manifests.v1`, `manifests/` when unset) into
/// `DEST/manifests`: what `opm alpha bundle extract -m DEST/` then reads. OLM's tool walks the
/// whole file system for the annotations file; every bundle image has it at this place.
pub fn cpb(args: &[String]) -> i32 {
    if args.len() > 1 || args.first().is_some_and(|a| a.starts_with('-')) {
        return usage("usage: cpb [DEST]");
    }
    let dest = std::path::PathBuf::from(args.first().map_or("./bundle", String::as_str));
    match copy_bundle(std::path::Path::new("metadata/annotations.yaml"), &dest) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cpb: {e}");
            1
        }
    }
}

fn copy_bundle(annotations: &std::path::Path, dest: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(annotations).map_err(|e| named(annotations, e))?;
    let file: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| named(annotations, e))?;
    let Some(map) = file.get("annotations").filter(|a| a.is_mapping()) else {
        return Err(named(annotations, "no annotations mapping"));
    };
    let manifests = map
        .get("operators.operatorframework.io.bundle.manifests.v1")
        .and_then(serde_yaml::Value::as_str)
        .unwrap_or("manifests/");
    let metadata = dest.join("metadata");
    std::fs::create_dir_all(&metadata).map_err(|e| named(&metadata, e))?;
    copy_followed(annotations, &metadata.join("annotations.yaml"))?;
    copy_followed(std::path::Path::new(manifests), &dest.join("manifests"))
}

/// A failure's message, naming the file it is about.
fn named(path: &std::path::Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

fn usage(message: &str) -> i32 {
    eprintln!("{message}");
    1
}

/// Copies `from` (followed if it is a link) to `to`: a file with its permission bits, or a
/// directory tree whose links are copied as links.
fn copy_followed(from: &std::path::Path, to: &std::path::Path) -> Result<(), String> {
    let meta = std::fs::metadata(from).map_err(|e| named(from, e))?;
    if !meta.is_dir() {
        // fs::copy copies the permission bits too.
        return std::fs::copy(from, to).map(drop).map_err(|e| named(to, e));
    }
    std::fs::create_dir_all(to).map_err(|e| named(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| named(from, e))? {
        let entry = entry.map_err(|e| named(from, e))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(|e| named(&source, e))?;
        if kind.is_symlink() {
            let link = std::fs::read_link(&source).map_err(|e| named(&source, e))?;
            std::os::unix::fs::symlink(&link, &target).map_err(|e| named(&target, e))?;
        } else {
            copy_followed(&source, &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    fn tree(root: &Path) {
        std::fs::create_dir_all(root.join("configs/pkg")).unwrap();
        std::fs::write(root.join("configs/pkg/catalog.json"), "{}").unwrap();
        std::os::unix::fs::symlink("pkg/catalog.json", root.join("configs/link")).unwrap();
        std::fs::create_dir_all(root.join("cache")).unwrap();
        std::fs::write(root.join("cache/index"), "index").unwrap();
    }

    #[test]
    fn copy_content_replaces_each_destination_with_its_source() {
        let d = tempfile::tempdir().unwrap();
        tree(d.path());
        let out = d.path().join("out");
        std::fs::create_dir_all(out.join("catalog/stale")).unwrap();
        let p = |rel: &str| d.path().join(rel).to_str().unwrap().to_owned();
        let code = copy_content(&strings(&[
            &format!("--catalog.from={}", p("configs")),
            &format!("--catalog.to={}", p("out/catalog")),
            "-cache.from",
            &p("cache"),
            &format!("-cache.to={}", p("out/cache")),
        ]));
        assert_eq!(code, 0);
        assert_eq!(
            std::fs::read_to_string(out.join("catalog/pkg/catalog.json")).unwrap(),
            "{}"
        );
        assert_eq!(
            std::fs::read_link(out.join("catalog/link")).unwrap(),
            Path::new("pkg/catalog.json")
        );
        assert!(!out.join("catalog/stale").exists());
        assert_eq!(
            std::fs::read_to_string(out.join("cache/index")).unwrap(),
            "index"
        );
    }

    #[test]
    fn copy_content_refuses_a_missing_flag_or_source() {
        let d = tempfile::tempdir().unwrap();
        let p = |rel: &str| d.path().join(rel).to_str().unwrap().to_owned();
        let missing = strings(&["--catalog.from=/a", "--catalog.to=/b", "--cache.from="]);
        assert_eq!(copy_content(&missing), 1);
        let absent = strings(&[
            &format!("--catalog.from={}", p("nowhere")),
            &format!("--catalog.to={}", p("to")),
            &format!("--cache.from={}", p("nowhere2")),
            &format!("--cache.to={}", p("to2")),
        ]);
        assert_eq!(copy_content(&absent), 1);
        assert!(!d.path().join("to").exists());
        assert_eq!(copy_content(&strings(&["--bogus=1"])), 1);
    }

    #[test]
    fn cpb_copies_the_annotations_and_the_manifests_they_name() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("metadata")).unwrap();
        std::fs::create_dir_all(d.path().join("deploy/crds")).unwrap();
        std::fs::create_dir_all(d.path().join("manifests")).unwrap();
        let dest = d.path().join("out");
        let at = |rel: &str| d.path().join(rel);
        // In a pod the directory is relative to the image root; absolute here.
        let manifests = at("deploy/");
        let file = format!(
            "annotations:\n  operators.operatorframework.io.bundle.manifests.v1: {}\n",
            manifests.display()
        );
        std::fs::write(at("metadata/annotations.yaml"), &file).unwrap();
        std::fs::write(at("metadata/properties.yaml"), "{}").unwrap();
        std::fs::write(at("deploy/csv.yaml"), "kind: CSV").unwrap();
        std::fs::write(at("deploy/crds/crd.yaml"), "kind: CRD").unwrap();
        std::fs::write(at("manifests/other.yaml"), "no").unwrap();
        copy_bundle(&at("metadata/annotations.yaml"), &dest).unwrap();
        let read = |rel: &str| std::fs::read_to_string(dest.join(rel)).unwrap();
        assert_eq!(read("metadata/annotations.yaml"), file);
        assert_eq!(read("manifests/csv.yaml"), "kind: CSV");
        assert_eq!(read("manifests/crds/crd.yaml"), "kind: CRD");
        assert!(!dest.join("manifests/other.yaml").exists());
        assert!(!dest.join("metadata/properties.yaml").exists());
        // No annotations file, a file that is not YAML, two destinations: exit 1.
        assert!(
            copy_bundle(&at("nowhere.yaml"), &dest)
                .unwrap_err()
                .contains("nowhere.yaml")
        );
        std::fs::write(at("bad.yaml"), "annotations: [").unwrap();
        assert!(
            copy_bundle(&at("bad.yaml"), &dest)
                .unwrap_err()
                .contains("bad.yaml")
        );
        assert_eq!(cpb(&strings(&["a", "b"])), 1);
    }

    #[test]
    fn cp_follows_a_named_link_and_copies_into_a_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("opm"), "binary").unwrap();
        std::os::unix::fs::symlink("opm", d.path().join("copy-content")).unwrap();
        std::fs::create_dir(d.path().join("utilities")).unwrap();
        let p = |rel: &str| d.path().join(rel).to_str().unwrap().to_owned();
        assert_eq!(cp(&strings(&[&p("copy-content"), &p("utilities")])), 0);
        let copied = d.path().join("utilities/copy-content");
        assert!(!copied.symlink_metadata().unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(copied).unwrap(), "binary");
        // A directory needs -R.
        assert_eq!(cp(&strings(&[&p("utilities"), &p("elsewhere")])), 1);
        assert_eq!(cp(&strings(&["-Rv", &p("utilities"), &p("elsewhere")])), 0);
        assert!(d.path().join("elsewhere/copy-content").is_file());
        assert_eq!(cp(&strings(&[&p("opm")])), 1);
    }
}
