//! One partition log on the simulated disk (`io::sim`), for crash tests that need a fault
//! reality cannot give on demand (process kill and power loss at a chosen moment).

use std::path::PathBuf;

use shardlog::io::sim::SimStorage;
use shardlog::log::{OpenOptions, PartitionLog};
use shardlog::LogConfig;

pub fn sim_dir() -> PathBuf {
    PathBuf::from("/sim/data/t-0")
}

/// Opens (or reopens, after a crash) the partition at `sim_dir()` with default configs.
pub async fn open_sim(sim: &SimStorage) -> PartitionLog {
    PartitionLog::open_with(
        sim.as_storage(),
        &sim_dir(),
        LogConfig::default(),
        OpenOptions::default(),
    )
    .await
    .unwrap()
}
