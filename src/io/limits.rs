//! Process resource limits the server depends on: file descriptors.

/// Raises the soft RLIMIT_NOFILE to the hard limit (the common soft default of 1024 is far
/// below what a server with many partitions needs) and logs the budget: descriptors the
/// configured connections and the shards' pools of open files may take. Returns the soft
/// limit in force afterwards.
pub fn raise_fd_limit(connections: u64, files: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), "getrlimit(RLIMIT_NOFILE) failed");
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            } else {
                tracing::warn!(error = %std::io::Error::last_os_error(), "could not raise RLIMIT_NOFILE");
            }
        }
    }
    tracing::info!(
        fd_limit = lim.rlim_cur,
        connections_max_fds = connections,
        segment_files_max_fds = files,
        "file descriptor budget (segment files, active and sealed, share the shards' pools)"
    );
    if connections + files >= lim.rlim_cur {
        tracing::warn!(
            fd_limit = lim.rlim_cur,
            "the fd limit is below the configured connection and open-file bounds; EMFILE is answered with retriable errors"
        );
    }
    lim.rlim_cur
}

/// File descriptors the process has open now (entries of /proc/self/fd; 0 if unreadable).
pub fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}
