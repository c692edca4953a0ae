//! Checking image pull specs the way upstream does for `olm.bundle` `image` and
//! `relatedImages` (containers/image `reference.ParseNormalizedNamed`): the docker reference
//! grammar, after `docker.io/library/` normalisation, with its error messages.

const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// Checks `s` as a normalisable, named docker reference.
pub(crate) fn validate_pull_spec(s: &str) -> Result<(), String> {
    if s.len() == 64 && s.bytes().all(|b| matches!(b, b'a'..=b'f' | b'0'..=b'9')) {
        return Err(format!(
            "invalid repository name ({s}), cannot specify 64-byte hexadecimal strings"
        ));
    }
    let (domain, remainder) = split_docker_domain(s);
    let remote_name = remainder.split(':').next().unwrap_or_default();
    if remote_name.to_lowercase() != remote_name {
        return Err("invalid reference format: repository name must be lowercase".to_owned());
    }
    parse(&format!("{domain}/{remainder}"))
}

/// Splits off the registry, defaulting to Docker Hub (and its `library/` namespace).
fn split_docker_domain(name: &str) -> (&str, String) {
    let (mut domain, remainder) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => ("docker.io", name),
    };
    if domain == "index.docker.io" {
        domain = "docker.io";
    }
    if domain == "docker.io" && !remainder.contains('/') {
        return (domain, format!("library/{remainder}"));
    }
    (domain, remainder.to_owned())
}

fn parse(s: &str) -> Result<(), String> {
    let Some((name, digest)) = match_reference(s) else {
        if s.is_empty() {
            return Err("repository name must have at least one component".to_owned());
        }
        if match_reference(&s.to_lowercase()).is_some() {
            return Err("invalid reference format: repository name must be lowercase".to_owned());
        }
        return Err("invalid reference format".to_owned());
    };
    if name.len() > NAME_TOTAL_LENGTH_MAX {
        return Err(format!(
            "repository name must not be more than {NAME_TOTAL_LENGTH_MAX} characters"
        ));
    }
    match digest {
        Some(digest) => validate_digest(digest),
        None => Ok(()),
    }
}

/// Matches `name[:tag][@digest]`; returns the name and the digest.
fn match_reference(s: &str) -> Option<(&str, Option<&str>)> {
    let (name_tag, digest) = match s.split_once('@') {
        Some((name_tag, digest)) => (name_tag, Some(digest)),
        None => (s, None),
    };
    if digest.is_some_and(|d| !is_digest(d)) {
        return None;
    }
    let name = match name_tag.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => {
            if !is_tag(tag) {
                return None;
            }
            name
        }
        _ => name_tag,
    };
    is_name(name).then_some((name, digest))
}

fn is_name(name: &str) -> bool {
    let components: Vec<&str> = name.split('/').collect();
    let all_paths = |c: &[&str]| c.iter().all(|p| is_path_component(p));
    all_paths(&components)
        || (components.len() >= 2 && is_domain(components[0]) && all_paths(&components[1..]))
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or runs of `-`.
fn is_path_component(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut i = 0;
    loop {
        let start = i;
        while i < b.len() && alnum(b[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == b.len() {
            return true;
        }
        let sep = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let ok = match &b[sep..i] {
            b"." | b"_" | b"__" => true,
            run => run.iter().all(|&c| c == b'-'),
        };
        if !ok {
            return false;
        }
    }
}

/// `host[:port]`, host being a DNS name or a bracketed IPv6 address.
fn is_domain(s: &str) -> bool {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((addr, after)) = rest.split_once(']') else {
            return false;
        };
        if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return false;
        }
        match after.strip_prefix(':') {
            Some(port) => ("", Some(port)),
            None if after.is_empty() => ("", None),
            None => return false,
        }
    } else {
        match s.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (s, None),
        }
    };
    let host_ok = s.starts_with('[')
        || host.split('.').all(|c| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|&x| x.is_ascii_alphanumeric() || x == b'-')
        });
    host_ok && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn is_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let b = tag.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && word(b[0])
        && b[1..].iter().all(|&c| word(c) || c == b'.' || c == b'-')
}

/// `algorithm:hex`, algorithm being letters/digits components joined by `-_+.`, hex ≥ 32.
fn is_digest(d: &str) -> bool {
    let Some((algorithm, hex)) = d.split_once(':') else {
        return false;
    };
    let component_ok = |c: &str| {
        let b = c.as_bytes();
        !b.is_empty() && b[0].is_ascii_alphabetic() && b.iter().all(|x| x.is_ascii_alphanumeric())
    };
    algorithm.split(['-', '_', '+', '.']).all(component_ok)
        && hex.len() >= 32
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

fn validate_digest(d: &str) -> Result<(), String> {
    let (algorithm, hex) = d.split_once(':').unwrap_or((d, ""));
    let size = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err("unsupported digest algorithm".to_owned()),
    };
    if hex.len() != size {
        return Err("invalid checksum digest length".to_owned());
    }
    if !hex.bytes().all(|b| matches!(b, b'a'..=b'f' | b'0'..=b'9')) {
        return Err("invalid checksum digest format".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "bd944a211eaf8f31da5e6d69e8541e7cada8f16a9f7a5a570b22478997819943";

    #[test]
    fn valid_pull_specs() {
        for s in [
            "busybox",
            "busybox:latest",
            "library/busybox",
            "quay.io/coreos/etcd-operator:v0.9.2",
            &format!("quay.io/coreos/etcd-operator@sha256:{SHA}"),
            &format!("registry.example.com:5000/a/b/c:tag@sha256:{SHA}"),
            "localhost/foo",
            "localhost:5000/foo_bar/baz__qux/a--b.c:1.0-rc_1",
            "[::1]:5000/foo",
            "Quay.IO/foo",
        ] {
            assert_eq!(validate_pull_spec(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn invalid_pull_specs_have_upstream_messages() {
        let err = |s: &str| validate_pull_spec(s).expect_err(s);
        assert_eq!(
            err("quay.io/Foo/bar"),
            "invalid reference format: repository name must be lowercase"
        );
        assert_eq!(
            err("Foo"),
            "invalid reference format: repository name must be lowercase"
        );
        assert_eq!(err("quay.io/foo bar"), "invalid reference format");
        assert_eq!(err("quay.io/foo:"), "invalid reference format");
        assert_eq!(err("quay.io/foo:-tag"), "invalid reference format");
        assert_eq!(err("quay.io/foo..bar"), "invalid reference format");
        assert_eq!(err("quay.io//foo"), "invalid reference format");
        assert_eq!(err("quay.io/foo@sha256:abc"), "invalid reference format");
        assert_eq!(
            err(&format!("quay.io/foo@sha256:{}", &SHA[..40])),
            "invalid checksum digest length"
        );
        assert_eq!(
            err(&format!("quay.io/foo@sha256:{}", SHA.to_uppercase())),
            "invalid checksum digest format"
        );
        assert_eq!(
            err(&format!("quay.io/foo@md5:{SHA}")),
            "unsupported digest algorithm"
        );
        assert_eq!(
            err(SHA),
            format!("invalid repository name ({SHA}), cannot specify 64-byte hexadecimal strings")
        );
        assert_eq!(
            err(&format!("quay.io/{}", "a".repeat(250))),
            "repository name must not be more than 255 characters"
        );
    }
}
