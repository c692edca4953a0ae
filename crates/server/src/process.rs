//! The process figures every Prometheus client exports under the same names
//! (`process_resident_memory_bytes`, `process_cpu_seconds_total`, ...), read from /proc/self
//! when scraped: nothing runs between scrapes.
use prometheus::core::{Collector, Desc};
use prometheus::proto::{Counter, Gauge, Metric, MetricFamily, MetricType};
use std::collections::HashMap;

const FIGURES: [(&str, &str, MetricType); 6] = [
    (
        "process_cpu_seconds_total",
        "Total user and system CPU time spent in seconds.",
        MetricType::COUNTER,
    ),
    (
        "process_resident_memory_bytes",
        "Resident memory size in bytes.",
        MetricType::GAUGE,
    ),
    (
        "process_virtual_memory_bytes",
        "Virtual memory size in bytes.",
        MetricType::GAUGE,
    ),
    (
        "process_open_fds",
        "Number of open file descriptors.",
        MetricType::GAUGE,
    ),
    (
        "process_max_fds",
        "Maximum number of open file descriptors.",
        MetricType::GAUGE,
    ),
    (
        "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.",
        MetricType::GAUGE,
    ),
];

pub(crate) struct ProcessCollector {
    descs: Vec<Desc>,
}

impl ProcessCollector {
    pub(crate) fn new() -> ProcessCollector {
        let descs = FIGURES
            .iter()
            .map(|(name, help, _)| {
                Desc::new((*name).into(), (*help).into(), vec![], HashMap::new())
                    .expect("valid metric")
            })
            .collect();
        ProcessCollector { descs }
    }
}

impl Collector for ProcessCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let Some(values) = read_proc() else {
            return Vec::new();
        };
        FIGURES
            .iter()
            .zip(values)
            .filter_map(|((name, help, kind), value)| {
                let value = value?;
                let mut metric = Metric::default();
                if *kind == MetricType::COUNTER {
                    let mut c = Counter::default();
                    c.set_value(value);
                    metric.set_counter(c);
                } else {
                    let mut g = Gauge::default();
                    g.set_value(value);
                    metric.set_gauge(g);
                }
                let mut family = MetricFamily::default();
                family.set_name((*name).into());
                family.set_help((*help).into());
                family.set_field_type(*kind);
                family.set_metric(vec![metric]);
                Some(family)
            })
            .collect()
    }
}

/// The values of [`FIGURES`], in order; one that cannot be read is left out.
fn read_proc() -> Option<[Option<f64>; FIGURES.len()]> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields are counted after
    // its closing parenthesis, where field 3 is the first.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    // SAFETY: sysconf only reads a configuration value.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK) as f64,
            libc::sysconf(libc::_SC_PAGESIZE) as f64,
        )
    };
    let cpu = field(14)
        .zip(field(15))
        .map(|(user, system)| (user + system) / ticks);
    let rss = field(24).map(|pages| pages * page);
    let virtual_bytes = field(23);
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as f64);
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            limits
                .lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|v| v.parse::<f64>().ok())
        });
    let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    let start = boot.zip(field(22)).map(|(boot, t)| boot + t / ticks);
    Some([cpu, rss, virtual_bytes, open_fds, max_fds, start])
}
