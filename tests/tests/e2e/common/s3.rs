//! A real S3 API on loopback for tests of lakes and files in buckets: moto's server, started
//! once per test binary (from the test Python's packages) unless `PONDRA_TEST_S3_ENDPOINT`
//! names one already running. Each test makes buckets of its own.

use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::python;

/// The S3 server of this test binary.
pub struct S3 {
    /// Kept so that its standard input stays open: the server ends when it closes, that is
    /// when this process does.
    _server: Option<Child>,
    pub endpoint: String,
}

/// Starts moto's server and stops it when its standard input closes.
const MOTO: &str = "import os, sys, threading\n\
from moto.server import main\n\
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()\n\
main(sys.argv[1:])\n";

impl S3 {
    /// The server shared by the tests of this binary.
    pub fn start() -> &'static S3 {
        static SHARED: OnceLock<S3> = OnceLock::new();
        SHARED.get_or_init(S3::launch)
    }

    fn launch() -> S3 {
        if let Ok(endpoint) = std::env::var("PONDRA_TEST_S3_ENDPOINT") {
            return S3 {
                _server: None,
                endpoint,
            };
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut server = python()
            .args(["-c", MOTO, "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto's server (pip install 'moto[server]')");
        let address = format!("127.0.0.1:{port}");
        let started = Instant::now();
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(
                matches!(server.try_wait(), Ok(None)),
                "moto's server stopped before it listened on {address}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "moto's server did not start on {address}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        S3 {
            _server: Some(server),
            endpoint: format!("http://{address}"),
        }
    }

    /// The variables that point AWS clients (Pondra's and boto3) at this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// `command` with this server's variables set.
    pub fn with_env<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command.envs(self.env())
    }

    /// Makes a bucket of a name no other test uses; returns the name.
    pub fn bucket(&self, purpose: &str) -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{purpose}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        self.boto3(&format!("s3.create_bucket(Bucket={name:?})"));
        name
    }

    /// Runs Python with boto3's client as `s3` (and `sys.argv[1:]` as `args`); returns stdout.
    pub fn boto3(&self, script: &str) -> String {
        self.boto3_with(script, &[])
    }

    pub fn boto3_with(&self, script: &str, args: &[&str]) -> String {
        // The script ends with `os._exit` after flushing: pyarrow's threads sometimes abort
        // the interpreter's own shutdown ("terminate called without an active exception")
        // when the machine is loaded, failing a script whose work succeeded.
        let program = format!(
            "import os, sys, boto3\ns3 = boto3.client('s3')\nargs = sys.argv[1:]\n{script}\n\
             sys.stdout.flush()\nos._exit(0)\n"
        );
        let output = self
            .with_env(&mut python())
            .arg("-c")
            .arg(program)
            .args(args)
            .output()
            .expect("run python");
        assert!(
            output.status.success(),
            "boto3 script failed: {}\n{script}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The keys under `prefix` of `bucket`.
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let script = format!(
            "pages = s3.get_paginator('list_objects_v2').paginate(Bucket={bucket:?}, Prefix={prefix:?})\n\
             for page in pages:\n    for o in page.get('Contents', []): print(o['Key'])"
        );
        self.boto3(&script).lines().map(str::to_string).collect()
    }

    /// Uploads a local folder's files under `prefix` of `bucket`.
    pub fn upload(&self, folder: &std::path::Path, bucket: &str, prefix: &str) {
        let script = format!(
            "import os\nroot = args[0]\n\
             for d, _, files in os.walk(root):\n    for f in files:\n        p = os.path.join(d, f)\n        \
             s3.upload_file(p, {bucket:?}, {prefix:?} + '/' + os.path.relpath(p, root))"
        );
        self.boto3_with(&script, &[folder.to_str().expect("a UTF-8 path")]);
    }

    /// Downloads every object under `prefix` of `bucket` into a local folder.
    pub fn download(&self, bucket: &str, prefix: &str, folder: &std::path::Path) {
        let script = format!(
            "import os\nroot = args[0]\n\
             pages = s3.get_paginator('list_objects_v2').paginate(Bucket={bucket:?}, Prefix={prefix:?} + '/')\n\
             for page in pages:\n    for o in page.get('Contents', []):\n        \
             p = os.path.join(root, o['Key'][len({prefix:?}) + 1:])\n        \
             os.makedirs(os.path.dirname(p), exist_ok=True)\n        s3.download_file({bucket:?}, o['Key'], p)"
        );
        self.boto3_with(&script, &[folder.to_str().expect("a UTF-8 path")]);
    }
}
