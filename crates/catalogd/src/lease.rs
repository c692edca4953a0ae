//! Which replica writes status: the holder of a `coordination.k8s.io/v1` Lease, taken and
//! renewed as client-go's leader election does (optimistic writes on the Lease's
//! resourceVersion; a holder that has not renewed for the lease duration, as observed on this
//! replica's own clock, may be replaced). Every replica serves every catalog whatever the
//! outcome; only status and finalizer writes wait for leadership.
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::info;

/// How long a holder that stops renewing keeps the Lease (client-go's default).
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// A holder renews this often, and gives leadership up when it has failed to renew for
/// [`RENEW_DEADLINE`] (before anyone else may take it).
const RENEW_PERIOD: Duration = Duration::from_secs(5);
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// A replica that does not hold the Lease tries this often.
const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// One replica's part in the election.
pub(crate) struct Election {
    api: Api<Lease>,
    name: String,
    identity: String,
    /// The holder and renew time last seen, and when this replica saw them change.
    observed: Option<(Option<String>, Option<MicroTime>, Instant)>,
}

impl Election {
    pub(crate) fn new(client: kube::Client, namespace: &str, name: &str, identity: &str) -> Self {
        Election {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            identity: identity.to_owned(),
            observed: None,
        }
    }

    /// Takes part until `stop` turns true, saying on `leader` whether this replica holds the
    /// Lease; on stop a held Lease is released, so another replica takes over at once.
    pub(crate) async fn run(
        mut self,
        leader: watch::Sender<bool>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut renewed: Option<Instant> = None;
        loop {
            let holds = match self.attempt().await {
                Ok(true) => {
                    renewed = Some(Instant::now());
                    true
                }
                Ok(false) => {
                    renewed = None;
                    false
                }
                Err(e) => {
                    crate::api_failure!(&e, lease = %self.name, "leader election");
                    renewed.is_some_and(|at| at.elapsed() < RENEW_DEADLINE)
                }
            };
            let changed = leader.send_if_modified(|held| std::mem::replace(held, holds) != holds);
            if changed {
                info!(lease = %self.name, identity = %self.identity, leader = holds, "leadership changed");
            }
            let wait = if holds { RENEW_PERIOD } else { RETRY_PERIOD };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|stopping| *stopping) => break,
            }
        }
        if *leader.borrow() {
            leader.send_replace(false);
            if let Err(e) = self.release().await {
                crate::api_failure!(&e, lease = %self.name, "releasing the lease");
            }
        }
    }

    /// Takes or renews the Lease: true when this replica holds it afterwards.
    async fn attempt(&mut self) -> Result<bool, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(now.clone(), 0)),
            };
            return written(self.api.create(&PostParams::default(), &lease).await);
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let record = (spec.holder_identity.clone(), spec.renew_time.clone());
        let seen_at = match &self.observed {
            Some((holder, renew, at)) if (holder, renew) == (&record.0, &record.1) => *at,
            _ => Instant::now(),
        };
        self.observed = Some((record.0.clone(), record.1.clone(), seen_at));
        let holder = record.0.unwrap_or_default();
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(LEASE_DURATION, Duration::from_secs);
        let mine = holder == self.identity;
        if !mine && !holder.is_empty() && seen_at.elapsed() < duration {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or_default();
        let mut renewed = self.spec(now, transitions + i32::from(!mine));
        if mine {
            renewed.acquire_time = spec.acquire_time.clone();
        }
        *spec = renewed;
        written(
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await,
        )
    }

    /// Gives the Lease up (an empty holder), if this replica still holds it.
    async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(&self.identity) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        written(
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await,
        )
        .map(|_| ())
    }

    fn spec(&self, now: MicroTime, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }
}

/// A write of the Lease: lost to another replica's (a conflict) is not an error.
fn written(result: Result<Lease, kube::Error>) -> Result<bool, kube::Error> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}
