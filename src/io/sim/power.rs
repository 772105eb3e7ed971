//! What a crash leaves on the simulated disk.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::file::{write_into, PendingWrite, SimFile, Unsynced};
use super::{CrashKind, DirChange, State};

/// Sectors are the unit a power loss cannot tear.
const SECTOR: usize = 512;

/// Applies `kind` to every file of `s`: afterwards volatile == durable everywhere and
/// nothing is in flight.
pub(super) fn apply(s: &mut State, kind: CrashKind) {
    let pending = std::mem::take(&mut s.in_flight);
    match kind {
        CrashKind::ProcessKill => process_kill(s, pending),
        CrashKind::PowerLoss => {
            undo_dir_changes(s, usize::MAX);
            for f in s.files.values_mut() {
                f.volatile = f.durable.clone();
            }
        }
        CrashKind::TornPowerLoss { seed } => power_loss(s, pending, seed, false),
        CrashKind::DamagingPowerLoss { seed } => power_loss(s, pending, seed, true),
    }
    for f in s.files.values_mut() {
        f.unsynced.clear();
        f.durable = f.volatile.clone();
        f.forget_written_past(f.volatile.len() as u64);
    }
}

/// The OS survives: completed writes stay; the kernel lands each write in flight or not.
fn process_kill(s: &mut State, pending: BTreeMap<u64, PendingWrite>) {
    let mut rng = fastrand::Rng::with_seed(s.next_write_id);
    if let Some(l) = &mut s.latency {
        rng = l.rng.clone();
    }
    for w in pending.into_values() {
        if let Some(f) = s.files.get_mut(&w.path) {
            if rng.bool() {
                write_into(&mut f.volatile, w.pos, &w.data);
            }
        }
    }
    s.dir_journal.clear();
}

/// Undoes the newest `n` uncommitted directory changes.
fn undo_dir_changes(s: &mut State, n: usize) {
    for _ in 0..n {
        let Some(change) = s.dir_journal.pop() else {
            return;
        };
        match change {
            DirChange::Created(path) => {
                s.files.remove(&path);
            }
            DirChange::Renamed { from, to, replaced } => {
                if let Some(f) = s.files.remove(&to) {
                    s.files.insert(from, f);
                }
                if let Some(old) = replaced {
                    s.files.insert(to, old);
                }
            }
            DirChange::Removed(path, f) => {
                s.files.insert(path, f);
            }
            DirChange::DirRenamed { from, to } => super::move_subtree(s, &to, &from),
        }
    }
}

fn power_loss(s: &mut State, pending: BTreeMap<u64, PendingWrite>, seed: u64, damaging: bool) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let undo = rng.usize(0..=s.dir_journal.len());
    undo_dir_changes(s, undo);
    let mut in_flight: BTreeMap<PathBuf, Vec<Unsynced>> = BTreeMap::new();
    for w in pending.into_values() {
        in_flight.entry(w.path).or_default().push(Unsynced::Write {
            pos: w.pos,
            data: w.data,
        });
    }
    for (path, f) in s.files.iter_mut() {
        let extra = in_flight.remove(path).unwrap_or_default();
        f.volatile = after_power_loss(f, &extra, &mut rng, damaging);
    }
}

/// The durable bytes with each later change landed whole, partly or not at all.
fn after_power_loss(
    f: &SimFile,
    in_flight: &[Unsynced],
    rng: &mut fastrand::Rng,
    damaging: bool,
) -> Vec<u8> {
    let mut out = f.durable.clone();
    for change in f.unsynced.iter().chain(in_flight) {
        match change {
            Unsynced::Truncate(size) => {
                if rng.bool() {
                    out.resize(*size as usize, 0);
                }
            }
            Unsynced::Write { pos, data } => land_sectors(&mut out, *pos, data, rng, damaging),
        }
    }
    out
}

/// Lands a write sector by sector: all, none, a prefix or a random subset of its sectors.
/// When `damaging`, a sector that does not land may be left as garbage instead.
fn land_sectors(out: &mut Vec<u8>, pos: u64, data: &[u8], rng: &mut fastrand::Rng, damaging: bool) {
    let sectors = data.len().div_ceil(SECTOR);
    let fate = rng.u8(0..4);
    let prefix = rng.usize(0..=sectors);
    for (i, sector) in data.chunks(SECTOR).enumerate() {
        let lands = match fate {
            0 => true,
            1 => false,
            2 => i < prefix,
            _ => rng.bool(),
        };
        let at = pos + (i * SECTOR) as u64;
        if lands {
            write_into(out, at, sector);
        } else if damaging && rng.u8(0..4) == 0 {
            let garbage: Vec<u8> = (0..sector.len()).map(|_| rng.u8(..)).collect();
            write_into(out, at, &garbage);
        }
    }
}
