//! packageserver's PackageManifests (what OperatorHub and `kubectl get packagemanifests` show)
//! compared field by field with an independent reading of the catalog's files: the heads
//! worked out here from the channel entries, the descriptions and icons taken from the head
//! bundles' CSVs as the files hold them.
use super::PACKAGESERVER;
use super::fbc::{Fbc, head_csv};
use base64::Engine;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub(super) struct PackageServer {
    http: reqwest::Client,
    token: String,
}

impl PackageServer {
    pub(super) fn new(token: &str) -> PackageServer {
        // packageserver serves a certificate it made itself.
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        PackageServer {
            http,
            token: token.to_owned(),
        }
    }

    async fn get(&self, path: &str) -> Option<(String, Vec<u8>)> {
        let response = self
            .http
            .get(format!("{PACKAGESERVER}{path}"))
            .bearer_auth(&self.token)
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        Some((content_type, response.bytes().await.ok()?.to_vec()))
    }

    /// The PackageManifests of CatalogSource olm/`catalog` as namespace e2e sees them, by
    /// package name, once packageserver lists `want` of them.
    async fn manifests(&self, catalog: &str, want: usize) -> BTreeMap<String, Value> {
        let path = format!(
            "/apis/packages.operators.coreos.com/v1/namespaces/e2e/packagemanifests?labelSelector=catalog%3D{catalog}"
        );
        crate::common::kube::eventually(
            &format!("{want} PackageManifests of {catalog}"),
            super::PATIENCE,
            || async {
                let (_, body) = self.get(&path).await?;
                let list: Value = serde_json::from_slice(&body).ok()?;
                let items: BTreeMap<String, Value> = list["items"]
                    .as_array()?
                    .iter()
                    .map(|p| {
                        (
                            p["metadata"]["name"].as_str().unwrap().to_owned(),
                            p.clone(),
                        )
                    })
                    .collect();
                (items.len() >= want).then_some(items)
            },
        )
        .await
    }

    /// packageserver shows catalog `name` exactly as the FBC in `dir` says.
    pub(super) async fn check_catalog(&self, name: &str, dir: &Path) {
        let fbc = Fbc::read(dir);
        let packages = fbc.packages();
        let listed = self.manifests(name, packages.len()).await;
        assert_eq!(
            listed.keys().collect::<Vec<_>>(),
            packages.iter().map(|p| &p.name).collect::<Vec<_>>(),
            "{name}: packages"
        );
        for package in &packages {
            let at = format!("{name}/{}", package.name);
            let status = &listed[&package.name]["status"];
            assert_eq!(status["packageName"], package.name.as_str(), "{at}");
            assert_eq!(
                status["defaultChannel"],
                package.default_channel.as_str(),
                "{at}"
            );
            let channels: BTreeMap<&str, &Value> = status["channels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["name"].as_str().unwrap(), c))
                .collect();
            assert_eq!(
                channels.keys().copied().collect::<Vec<_>>(),
                package
                    .channels
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                "{at}: channels"
            );
            for (channel, head) in &package.channels {
                let listed = channels[channel.as_str()];
                assert_eq!(listed["currentCSV"], head.as_str(), "{at}/{channel}: head");
                let desc = &listed["currentCSVDesc"];
                let csv = head_csv(&fbc, &package.name, head);
                for field in ["description", "displayName"] {
                    assert_eq!(
                        desc[field].as_str().unwrap_or_default(),
                        csv[field].as_str().unwrap_or_default(),
                        "{at}/{channel}: {field}"
                    );
                }
                if channel == &package.default_channel {
                    self.check_icon(&at, &package.name, &csv).await;
                }
            }
        }
    }

    /// The icon packageserver serves for a package is the default channel head's CSV icon.
    async fn check_icon(&self, at: &str, package: &str, csv: &Value) {
        let Some(icon) = csv["icon"].as_array().and_then(|i| i.first()) else {
            return;
        };
        let path = format!(
            "/apis/packages.operators.coreos.com/v1/namespaces/e2e/packagemanifests/{package}/icon"
        );
        let (media_type, bytes) = self
            .get(&path)
            .await
            .unwrap_or_else(|| panic!("{at}: no icon"));
        let expected = base64::engine::general_purpose::STANDARD
            .decode(icon["base64data"].as_str().unwrap().trim())
            .unwrap();
        assert_eq!(
            media_type,
            icon["mediatype"].as_str().unwrap(),
            "{at}: icon type"
        );
        assert!(bytes == expected, "{at}: icon bytes differ");
    }
}
