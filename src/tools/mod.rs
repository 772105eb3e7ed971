//! Command-line tools that work on files offline (no server).

pub mod dump_log;
