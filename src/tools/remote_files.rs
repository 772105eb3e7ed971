//! `dump-log` of remote segments: files named by URL (`s3://BUCKET/PREFIX/topics/T/P/
//! <base>-<upload>.log`, `gs://`, `az://`, `file:///`) are fetched through the same object
//! store client the server uses (credentials and endpoint from the standard environment
//! variables, e.g. `AWS_ENDPOINT` for an S3-compatible store) into a private temporary
//! directory under their local names (`<base>.log`, ...), so every check and format of the
//! tool applies to them as to local files.

use std::path::{Path, PathBuf};

/// Whether a `--files` entry names a remote object.
pub fn is_remote(file: &Path) -> bool {
    let s = file.to_string_lossy();
    [
        "s3://", "s3a://", "gs://", "az://", "abfs://", "abfss://", "azure://", "file://",
    ]
    .iter()
    .any(|scheme| s.starts_with(scheme))
}

/// `scheme://bucket/key...` as (`scheme://bucket`, `key`).
fn split(url: &str) -> Result<(String, String), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url}: not scheme://bucket/key"))?;
    let (bucket, key) = match scheme {
        // file:///DIR/key: the store is the root directory.
        "file" => ("", rest.trim_start_matches('/')),
        _ => rest
            .split_once('/')
            .ok_or_else(|| format!("{url}: names no object"))?,
    };
    let store = match scheme {
        "file" => "file:///".to_string(),
        _ => format!("{scheme}://{bucket}"),
    };
    Ok((store, key.to_string()))
}

/// The local name of a remote segment file: `<base>-<upload>.<suffix>` -> `<base>.<suffix>`.
fn local_name(key: &str) -> String {
    let name = key.rsplit('/').next().unwrap_or(key);
    match (name.split_once('-'), name.rfind('.')) {
        (Some((base, _)), Some(dot)) if base.len() == 20 => format!("{base}{}", &name[dot..]),
        _ => name.to_string(),
    }
}

/// `--files` with the remote entries fetched into a private directory, removed on drop.
pub struct Fetched {
    pub files: Vec<PathBuf>,
    dir: Option<PathBuf>,
}

impl Fetched {
    /// Local entries are kept as they are; remote ones are fetched, from `endpoint` when
    /// it is not empty (the server's `remote.storage.endpoint`).
    pub fn all(files: &[PathBuf], endpoint: &str) -> Result<Fetched, String> {
        if !files.iter().any(|f| is_remote(f)) {
            return Ok(Fetched {
                files: files.to_vec(),
                dir: None,
            });
        }
        let dir = std::env::temp_dir().join(format!(
            "shardlog-dump-{}-{:x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        match fetch(files, &dir, endpoint) {
            Ok(files) => Ok(Fetched {
                files,
                dir: Some(dir),
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }
}

impl Drop for Fetched {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Fetches the remote entries of `files` into `dir`; local entries are kept as they are.
fn fetch(files: &[PathBuf], dir: &Path, endpoint: &str) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::with_capacity(files.len());
    for file in files {
        if !is_remote(file) {
            out.push(file.clone());
            continue;
        }
        let url = file.to_string_lossy().to_string();
        let (store_url, key) = split(&url)?;
        let s3 = store_url.starts_with("s3");
        if s3 && endpoint.is_empty() && std::env::var_os("AWS_ENDPOINT").is_none() {
            eprintln!("note: no remote.storage.endpoint (--command-config, -X) and no AWS_ENDPOINT: fetching {url} from AWS S3 itself");
        }
        let store = crate::remote::open_store(&store_url, endpoint).map_err(|e| e.to_string())?;
        let fetched = futures_lite::future::block_on(store.get(store.key(&key)));
        let (bytes, _) = fetched.map_err(|e| format!("{url}: {e}"))?;
        let path = dir.join(local_name(&key));
        std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_names_become_local_names() {
        assert_eq!(
            local_name("topics/t/0/00000000000000000042-0123abcd.index"),
            "00000000000000000042.index"
        );
        assert_eq!(local_name("x/manifest.json"), "manifest.json");
        assert_eq!(
            split("s3://bkt/pre/topics/t/0/a.log").unwrap(),
            ("s3://bkt".to_string(), "pre/topics/t/0/a.log".to_string())
        );
        assert!(is_remote(Path::new("gs://b/k")) && !is_remote(Path::new("/data/t-0/0.log")));
    }
}
