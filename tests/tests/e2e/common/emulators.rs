//! Azure's and Google Cloud Storage's emulators on loopback, for the bucket tests that run on
//! moto's S3 too: Azurite, and fake-gcs-server behind a translator of the one request it lacks
//! (`tests/python/emulators.py` says which). Each starts once per test binary and stops when
//! the binary ends. What a test does in their buckets goes through each cloud's own Python
//! client, as boto3 does on moto.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use super::python;
use super::s3::S3;

/// A store the bucket tests run on, with what they do in its buckets.
pub trait BucketStore: Sync {
    /// The scheme of its URLs.
    fn scheme(&self) -> &'static str;
    /// The variables that point Pondra at it.
    fn env(&self) -> Vec<(&'static str, String)>;
    /// Makes a bucket (an Azure container) of a name no other test uses; returns the name.
    fn bucket(&self, purpose: &str) -> String;
    /// The keys under `prefix` of `bucket`.
    fn keys(&self, bucket: &str, prefix: &str) -> Vec<String>;
    /// Uploads a local folder's files under `prefix` of `bucket`.
    fn upload(&self, folder: &Path, bucket: &str, prefix: &str);
    /// Downloads every object under `prefix` of `bucket` into a local folder.
    fn download(&self, bucket: &str, prefix: &str, folder: &Path);
    /// Writes a local file to `key` of `bucket`.
    fn put(&self, bucket: &str, key: &str, file: &Path);
    /// Reads `key` of `bucket` into a local file.
    fn get(&self, bucket: &str, key: &str, file: &Path);

    /// The URL of `path` in `bucket`.
    fn url(&self, bucket: &str, path: &str) -> String {
        format!("{}://{bucket}/{path}", self.scheme())
    }
}

/// A name no other test's bucket has.
pub fn unique_bucket_name(purpose: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{purpose}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cloud {
    Azure,
    Gcs,
}

/// An emulator of this test binary.
pub struct Emulator {
    cloud: Cloud,
    /// Kept so that its standard input stays open: the emulator stops when it closes.
    _server: Child,
    endpoint: String,
    /// Where Azurite keeps its blobs.
    _folder: tempfile::TempDir,
}

fn script() -> String {
    format!("{}/python/emulators.py", env!("CARGO_MANIFEST_DIR"))
}

impl Emulator {
    /// Azurite, shared by the tests of this binary.
    pub fn azure() -> &'static Emulator {
        static SHARED: OnceLock<Emulator> = OnceLock::new();
        SHARED.get_or_init(|| Emulator::launch(Cloud::Azure))
    }

    /// fake-gcs-server, shared by the tests of this binary.
    pub fn gcs() -> &'static Emulator {
        static SHARED: OnceLock<Emulator> = OnceLock::new();
        SHARED.get_or_init(|| Emulator::launch(Cloud::Gcs))
    }

    fn launch(cloud: Cloud) -> Emulator {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let folder = tempfile::tempdir().expect("a folder for the emulator");
        let mut command = python();
        command.arg(script()).arg("serve");
        match cloud {
            Cloud::Azure => command
                .args(["azurite", &port.to_string()])
                .arg(folder.path()),
            Cloud::Gcs => command.args(["gcs", &port.to_string()]),
        };
        let mut server = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start tests/python/emulators.py");
        let mut first = String::new();
        let stdout = server.stdout.take().expect("piped");
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("read the emulator's first line");
        assert_eq!(
            first.trim(),
            "ready",
            "the {cloud:?} emulator did not start"
        );
        Emulator {
            cloud,
            _server: server,
            endpoint: format!("http://127.0.0.1:{port}"),
            _folder: folder,
        }
    }

    fn operate(&self, args: &[&str]) -> String {
        let cloud = match self.cloud {
            Cloud::Azure => "azure",
            Cloud::Gcs => "gcs",
        };
        let output = python()
            .arg(script())
            .args([cloud, &self.endpoint])
            .args(args)
            .output()
            .expect("run tests/python/emulators.py");
        assert!(
            output.status.success(),
            "{args:?} on {cloud}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

fn path_text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

impl BucketStore for Emulator {
    fn scheme(&self) -> &'static str {
        match self.cloud {
            Cloud::Azure => "az",
            Cloud::Gcs => "gs",
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        match self.cloud {
            Cloud::Azure => vec![
                ("AZURE_STORAGE_USE_EMULATOR", "true".into()),
                ("AZURITE_BLOB_STORAGE_URL", self.endpoint.clone()),
            ],
            // The emulator takes any token.
            Cloud::Gcs => vec![
                ("GOOGLE_BASE_URL", self.endpoint.clone()),
                ("GOOGLE_BEARER_TOKEN", "emulator".into()),
            ],
        }
    }

    fn bucket(&self, purpose: &str) -> String {
        let name = unique_bucket_name(purpose);
        self.operate(&["make-bucket", &name]);
        name
    }

    fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let listed = self.operate(&["keys", bucket, prefix]);
        listed.lines().map(str::to_string).collect()
    }

    fn upload(&self, folder: &Path, bucket: &str, prefix: &str) {
        self.operate(&["upload", path_text(folder), bucket, prefix]);
    }

    fn download(&self, bucket: &str, prefix: &str, folder: &Path) {
        self.operate(&["download", bucket, prefix, path_text(folder)]);
    }

    fn put(&self, bucket: &str, key: &str, file: &Path) {
        self.operate(&["put", bucket, key, path_text(file)]);
    }

    fn get(&self, bucket: &str, key: &str, file: &Path) {
        self.operate(&["get", bucket, key, path_text(file)]);
    }
}

impl BucketStore for S3 {
    fn scheme(&self) -> &'static str {
        "s3"
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        S3::env(self)
    }

    fn bucket(&self, purpose: &str) -> String {
        S3::bucket(self, purpose)
    }

    fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        S3::keys(self, bucket, prefix)
    }

    fn upload(&self, folder: &Path, bucket: &str, prefix: &str) {
        S3::upload(self, folder, bucket, prefix)
    }

    fn download(&self, bucket: &str, prefix: &str, folder: &Path) {
        S3::download(self, bucket, prefix, folder)
    }

    fn put(&self, bucket: &str, key: &str, file: &Path) {
        let script = format!("s3.upload_file(args[0], {bucket:?}, {key:?})");
        self.boto3_with(&script, &[path_text(file)]);
    }

    fn get(&self, bucket: &str, key: &str, file: &Path) {
        let script = format!("s3.download_file({bucket:?}, {key:?}, args[0])");
        self.boto3_with(&script, &[path_text(file)]);
    }
}

/// `command` with `store`'s variables set.
pub fn with_store_env<'c>(store: &dyn BucketStore, command: &'c mut Command) -> &'c mut Command {
    command.envs(store.env())
}
