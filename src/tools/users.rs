//! `shardlog users`: the SCRAM credentials of a data directory, managed offline (the server
//! must be stopped: the tool takes the data directory's lock), as Kafka's
//! `kafka-storage format --add-scram` sets the first administrator before the first start.
//! The password comes from stdin or a file, never the command line; only its salted keys
//! are stored (`security/credentials.rs`).

use std::io::Read;
use std::path::PathBuf;

use crate::security::credentials::{check, CredentialStore};
use crate::security::scram::{self, Mechanism, MIN_ITERATIONS};

#[derive(clap::Args, Debug)]
pub struct UsersArgs {
    #[command(subcommand)]
    pub action: UsersAction,
}

/// Whose credential, for which mechanism, in which data directory.
#[derive(clap::Args, Debug)]
pub struct Credential {
    #[arg(long)]
    pub data_dir: PathBuf,
    #[arg(long)]
    pub user: String,
    /// SCRAM-SHA-256 or SCRAM-SHA-512.
    #[arg(long, default_value = "SCRAM-SHA-256")]
    pub mechanism: String,
}

#[derive(clap::Subcommand, Debug)]
#[non_exhaustive]
pub enum UsersAction {
    /// List users and their mechanisms (never a secret).
    List {
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// Set (create or replace) a user's credential for one mechanism.
    Set {
        #[command(flatten)]
        who: Credential,
        #[arg(long, default_value_t = MIN_ITERATIONS)]
        iterations: u32,
        /// Read the password from stdin (one line; the newline is dropped).
        #[arg(long, conflicts_with = "password_file")]
        password_stdin: bool,
        /// Read the password from this file (its first line).
        #[arg(long)]
        password_file: Option<PathBuf>,
    },
    /// Delete a user's credential for one mechanism.
    Delete {
        #[command(flatten)]
        who: Credential,
    },
}

fn mechanism(name: &str) -> Result<Mechanism, String> {
    Mechanism::from_name(name)
        .ok_or_else(|| format!("unknown mechanism {name:?}: SCRAM-SHA-256 or SCRAM-SHA-512"))
}

/// The first line of what was read, without its line end; an empty password is refused.
fn password_from(source: impl Read) -> Result<String, String> {
    let mut text = String::new();
    source
        .take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| format!("reading the password: {e}"))?;
    let line = text.lines().next().unwrap_or_default().to_string();
    if line.is_empty() {
        return Err("empty password".into());
    }
    Ok(line)
}

/// The password from stdin or from a file, as the flags say.
fn read_password(stdin: bool, file: Option<PathBuf>) -> Result<String, String> {
    match (stdin, file) {
        (true, _) => password_from(std::io::stdin().lock()),
        (false, Some(f)) => {
            password_from(std::fs::File::open(&f).map_err(|e| format!("{}: {e}", f.display()))?)
        }
        (false, None) => Err("give --password-stdin or --password-file".into()),
    }
}

pub fn run(args: UsersArgs, out: &mut dyn std::io::Write) -> Result<(), String> {
    let data_dir = match &args.action {
        UsersAction::List { data_dir } => data_dir.clone(),
        UsersAction::Set { who, .. } | UsersAction::Delete { who } => who.data_dir.clone(),
    };
    // A running server holds the lock: its copy would not see the change.
    let _lock = crate::catalog::data_dir::lock(&data_dir)
        .map_err(|e| format!("{e} (stop the server first)"))?;
    let meta_dir = data_dir.join(crate::catalog::topics::META_DIR);
    let mut store = CredentialStore::read(&meta_dir).map_err(|e| e.to_string())?;
    let write = |s: &CredentialStore| {
        std::fs::create_dir_all(&meta_dir).map_err(|e| format!("{}: {e}", meta_dir.display()))?;
        s.write(&meta_dir).map_err(|e| e.to_string())
    };
    let print = |out: &mut dyn std::io::Write, line: String| {
        writeln!(out, "{line}").map_err(|e| e.to_string())
    };
    match args.action {
        UsersAction::List { .. } => {
            for (user, m, iterations) in store.list() {
                print(
                    out,
                    format!("{user}\t{}\titerations={iterations}", m.name()),
                )?;
            }
            Ok(())
        }
        UsersAction::Set {
            who:
                Credential {
                    user,
                    mechanism: name,
                    ..
                },
            iterations,
            password_stdin,
            password_file,
        } => {
            let m = mechanism(&name)?;
            check(&user, iterations).map_err(|e| e.to_string())?;
            let password = read_password(password_stdin, password_file)?;
            store.set(&user, m, scram::Credential::new(m, &password, iterations));
            write(&store)?;
            print(out, format!("Set {} credential of user {user}.", m.name()))
        }
        UsersAction::Delete {
            who:
                Credential {
                    user,
                    mechanism: name,
                    ..
                },
        } => {
            let m = mechanism(&name)?;
            if !store.remove(&user, m) {
                return Err(format!("user {user} has no {} credential", m.name()));
            }
            write(&store)?;
            print(
                out,
                format!("Deleted {} credential of user {user}.", m.name()),
            )
        }
    }
}
