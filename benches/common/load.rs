//! What the clients of one timed window saw, summed from each client's own counts: the
//! catalogd benches run their clients as tasks that count alone and add up at the end.
use std::time::Duration;

pub(crate) struct Load {
    pub(crate) requests: usize,
    pub(crate) errors: usize,
    pub(crate) bytes: usize,
    /// Of the successful requests, sorted.
    pub(crate) latencies: Vec<Duration>,
}

/// The sum of each client's (latencies of its successful requests, errors, bytes).
pub(crate) fn total(clients: Vec<(Vec<Duration>, usize, usize)>) -> Load {
    let mut l = Load {
        requests: 0,
        errors: 0,
        bytes: 0,
        latencies: Vec::new(),
    };
    for (latencies, errors, bytes) in clients {
        l.requests += latencies.len() + errors;
        l.latencies.extend(latencies);
        l.errors += errors;
        l.bytes += bytes;
    }
    l.latencies.sort();
    l
}
