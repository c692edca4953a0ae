//! Registry credentials from a docker `config.json`: `--registry-config`, else
//! `$REGISTRY_AUTH_FILE`, else `~/.docker/config.json`.
use base64::Engine;
use oci_client::secrets::RegistryAuth;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Clone)]
pub(crate) struct Credentials {
    by_registry: HashMap<String, (String, String)>,
}

#[derive(serde::Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: HashMap<String, Entry>,
}

#[derive(serde::Deserialize)]
struct Entry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// Docker Hub is written several ways in config files.
fn normalise(host: &str) -> String {
    let host = host
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let host = host.split('/').next().unwrap_or(host);
    match host {
        "index.docker.io" | "registry-1.docker.io" | "docker.io" => "docker.io".to_owned(),
        h => h.to_owned(),
    }
}

impl Credentials {
    /// Loads the first config file that applies; none at all means anonymous access.
    pub(crate) fn load(explicit: Option<&Path>) -> Result<Credentials, String> {
        let path = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => std::env::var_os("REGISTRY_AUTH_FILE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker/config.json"))
                })
                .filter(|p| p.exists()),
        };
        match path {
            Some(p) => Self::parse(&p),
            None => Ok(Credentials::default()),
        }
    }

    fn parse(path: &Path) -> Result<Credentials, String> {
        let text =
            std::fs::read(path).map_err(|e| format!("registry config {}: {e}", path.display()))?;
        let file: ConfigFile = serde_json::from_slice(&text)
            .map_err(|e| format!("registry config {}: {e}", path.display()))?;
        let mut by_registry = HashMap::new();
        for (host, entry) in file.auths {
            let pair = match (entry.auth, entry.username, entry.password) {
                (Some(auth), _, _) if !auth.is_empty() => {
                    let decoded = base64::engine::general_purpose::STANDARD
                        .decode(auth.trim())
                        .map_err(|e| {
                            format!("registry config {}: auth for {host}: {e}", path.display())
                        })?;
                    let text = String::from_utf8_lossy(&decoded).into_owned();
                    let (user, pass) = text.split_once(':').ok_or_else(|| {
                        format!(
                            "registry config {}: auth for {host} is not user:password",
                            path.display()
                        )
                    })?;
                    (user.to_owned(), pass.to_owned())
                }
                (_, Some(user), Some(pass)) => (user, pass),
                _ => continue,
            };
            by_registry.insert(normalise(&host), pair);
        }
        Ok(Credentials { by_registry })
    }

    pub(crate) fn for_registry(&self, registry: &str) -> RegistryAuth {
        match self.by_registry.get(&normalise(registry)) {
            Some((user, pass)) => RegistryAuth::Basic(user.clone(), pass.clone()),
            None => RegistryAuth::Anonymous,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_auth_and_username_password_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"auths":{"127.0.0.1:5000":{"auth":"dXNlcjpwYXNz"},"https://index.docker.io/v1/":{"username":"u","password":"p"}}}"#,
        )
        .unwrap();
        let creds = Credentials::load(Some(&path)).unwrap();
        assert_eq!(
            creds.for_registry("127.0.0.1:5000"),
            RegistryAuth::Basic("user".into(), "pass".into())
        );
        assert_eq!(
            creds.for_registry("docker.io"),
            RegistryAuth::Basic("u".into(), "p".into())
        );
        assert_eq!(creds.for_registry("quay.io"), RegistryAuth::Anonymous);
        std::fs::write(&path, "{").unwrap();
        assert!(
            Credentials::load(Some(&path))
                .unwrap_err()
                .starts_with("registry config ")
        );
    }
}
