//! A Kubernetes API server as tests read and write it: plain REST paths and JSON, so that each
//! step reads like the objects it sends.
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

pub struct Kube(pub kube::Client);

impl Kube {
    async fn send(
        &self,
        method: http::Method,
        path: &str,
        body: Option<(&str, Value)>,
    ) -> Result<Value, kube::Error> {
        let builder = http::Request::builder().method(method).uri(path);
        let request = match body {
            Some((content_type, body)) => builder
                .header(http::header::CONTENT_TYPE, content_type)
                .body(serde_json::to_vec(&body).unwrap()),
            None => builder.body(Vec::new()),
        }
        .unwrap();
        self.0.request::<Value>(request).await
    }

    /// The object at `path`, or None when there is none.
    pub async fn get(&self, path: &str) -> Option<Value> {
        match self.send(http::Method::GET, path, None).await {
            Ok(v) => Some(v),
            Err(kube::Error::Api(status)) if status.code == 404 => None,
            Err(e) => panic!("GET {path}: {e}"),
        }
    }

    /// The items of the list at `path`.
    pub async fn list(&self, path: &str) -> Vec<Value> {
        let list = self
            .get(path)
            .await
            .unwrap_or_else(|| panic!("GET {path}: not found"));
        list["items"].as_array().cloned().unwrap_or_default()
    }

    pub async fn create(&self, path: &str, object: Value) -> Value {
        self.write(http::Method::POST, "application/json", path, object)
            .await
    }

    /// Sends `body` as `content_type`; the object the server answers with.
    async fn write(
        &self,
        method: http::Method,
        content_type: &str,
        path: &str,
        body: Value,
    ) -> Value {
        self.send(method.clone(), path, Some((content_type, body.clone())))
            .await
            .unwrap_or_else(|e| panic!("{method} {path} {body}: {e}"))
    }

    pub async fn delete(&self, path: &str) {
        self.send(http::Method::DELETE, path, None)
            .await
            .unwrap_or_else(|e| panic!("DELETE {path}: {e}"));
    }

    pub async fn merge_patch(&self, path: &str, patch: Value) -> Value {
        self.write(
            http::Method::PATCH,
            "application/merge-patch+json",
            path,
            patch,
        )
        .await
    }
}

/// Polls `check` (every 200 ms) until it gives an answer; fails after `patience`.
pub async fn eventually<T, F, Fut>(what: &str, patience: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        if let Some(answer) = check().await {
            return answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {what} within {patience:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
