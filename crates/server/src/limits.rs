//! The bounds every client of the server lives within. The defaults let OLM, packageserver
//! and people with grpcurl work unhindered while a client that misbehaves costs a bounded
//! amount of memory, descriptors and time.
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Concurrent calls (HTTP/2 streams) on one connection; clients queue beyond it.
    pub max_streams_per_connection: u32,
    /// How long a new connection may take to send its HTTP/2 preface.
    pub handshake_timeout: Duration,
    /// How long a connection may stay open with no call in progress.
    pub idle_timeout: Duration,
    /// Bytes of answers one connection's calls may hold before its client reads them.
    pub connection_buffer: u64,
    /// The same, for all connections together.
    pub total_buffer: u64,
    /// The size of the largest request message accepted.
    pub max_request_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 1024,
            max_streams_per_connection: 100,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10 * 60),
            connection_buffer: 16 << 20,
            total_buffer: 256 << 20,
            max_request_bytes: 4 << 20,
        }
    }
}

impl Limits {
    pub(super) fn connection_buffer_kib(&self) -> u32 {
        kib(self.connection_buffer)
    }

    pub(super) fn total_buffer_kib(&self) -> u32 {
        kib(self.total_buffer).max(self.connection_buffer_kib())
    }
}

/// Semaphores count in KiB: a u32 of them covers 4 TiB.
fn kib(bytes: u64) -> u32 {
    bytes.div_ceil(1024).clamp(1, u32::MAX as u64) as u32
}
