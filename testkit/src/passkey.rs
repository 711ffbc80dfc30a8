//! A software passkey: what a phone's authenticator does in a WebAuthn ceremony, in Rust, so
//! the server's checks can be tested without a browser (the browser tests use Chromium's
//! virtual authenticators). It answers `navigator.credentials.create` with `none` attestation
//! and `navigator.credentials.get` with a signature over `authenticatorData ||
//! SHA-256(clientDataJSON)`, in the JSON form the pages post. Every field the server checks
//! (origin, relying party, flags, counter) can be set wrong on purpose.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ciborium::Value as Cbor;
use ed25519_dalek::Signer as _;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// User present, user verified, attested credential data.
const UP: u8 = 0x01;
const UV: u8 = 0x04;
const AT: u8 = 0x40;

pub enum Key {
    /// The pair, and its PKCS#8 form to copy it by.
    Es256(EcdsaKeyPair, Vec<u8>),
    Ed25519(ed25519_dalek::SigningKey),
}

pub struct SoftPasskey {
    pub credential_id: Vec<u8>,
    key: Key,
    /// The next signature's counter is this plus one; 0 keeps none (as synced passkeys).
    pub sign_count: u32,
    pub keeps_counter: bool,
    /// The origin the "browser" writes into clientDataJSON.
    pub origin: String,
    /// The relying party whose hash goes into authenticatorData.
    pub rp_id: String,
    /// Whether the person verified themselves (the UV flag).
    pub verifies_user: bool,
}

impl SoftPasskey {
    pub fn es256(origin: &str, rp_id: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self::new(Key::Es256(pair, pkcs8.as_ref().to_vec()), origin, rp_id)
    }

    /// The same credential on a second authenticator (a copied key), with its counter as it
    /// stands.
    pub fn duplicate(&self) -> Self {
        let key = match &self.key {
            Key::Es256(_, pkcs8) => Key::Es256(
                EcdsaKeyPair::from_pkcs8(
                    &ECDSA_P256_SHA256_ASN1_SIGNING,
                    pkcs8,
                    &SystemRandom::new(),
                )
                .unwrap(),
                pkcs8.clone(),
            ),
            Key::Ed25519(key) => Key::Ed25519(key.clone()),
        };
        Self {
            credential_id: self.credential_id.clone(),
            key,
            sign_count: self.sign_count,
            keeps_counter: self.keeps_counter,
            origin: self.origin.clone(),
            rp_id: self.rp_id.clone(),
            verifies_user: self.verifies_user,
        }
    }

    pub fn ed25519(origin: &str, rp_id: &str) -> Self {
        let mut seed = [0u8; 32];
        ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut seed).unwrap();
        Self::new(
            Key::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed)),
            origin,
            rp_id,
        )
    }

    fn new(key: Key, origin: &str, rp_id: &str) -> Self {
        let mut credential_id = vec![0u8; 16];
        ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut credential_id).unwrap();
        Self {
            credential_id,
            key,
            sign_count: 0,
            keeps_counter: true,
            origin: origin.to_owned(),
            rp_id: rp_id.to_owned(),
            verifies_user: true,
        }
    }

    pub fn id(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.credential_id)
    }

    fn flags(&self) -> u8 {
        if self.verifies_user { UP | UV } else { UP }
    }

    fn next_count(&mut self) -> u32 {
        if self.keeps_counter {
            self.sign_count += 1;
            self.sign_count
        } else {
            0
        }
    }

    fn cose_key(&self) -> Vec<u8> {
        let map = match &self.key {
            Key::Es256(pair, _) => {
                let point = pair.public_key().as_ref();
                vec![
                    (Cbor::from(1), Cbor::from(2)),
                    (Cbor::from(3), Cbor::from(-7)),
                    (Cbor::from(-1), Cbor::from(1)),
                    (Cbor::from(-2), Cbor::Bytes(point[1..33].to_vec())),
                    (Cbor::from(-3), Cbor::Bytes(point[33..65].to_vec())),
                ]
            }
            Key::Ed25519(key) => vec![
                (Cbor::from(1), Cbor::from(1)),
                (Cbor::from(3), Cbor::from(-8)),
                (Cbor::from(-1), Cbor::from(6)),
                (
                    Cbor::from(-2),
                    Cbor::Bytes(key.verifying_key().to_bytes().to_vec()),
                ),
            ],
        };
        let mut bytes = Vec::new();
        ciborium::into_writer(&Cbor::Map(map), &mut bytes).unwrap();
        bytes
    }

    fn client_data(&self, kind: &str, challenge: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "type": kind,
            "challenge": challenge,
            "origin": self.origin,
            "crossOrigin": false,
        }))
        .unwrap()
    }

    /// The answer to `navigator.credentials.create({publicKey: options})`, where `options`
    /// is the JSON the enrolment page was given.
    pub fn register(&mut self, options: &Value) -> Value {
        let challenge = options["challenge"].as_str().expect("a challenge");
        let count = self.next_count();
        let mut auth = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        auth.push(self.flags() | AT);
        auth.extend_from_slice(&count.to_be_bytes());
        auth.extend_from_slice(&[0u8; 16]);
        auth.extend_from_slice(&(self.credential_id.len() as u16).to_be_bytes());
        auth.extend_from_slice(&self.credential_id);
        auth.extend_from_slice(&self.cose_key());
        let attestation = Cbor::Map(vec![
            (Cbor::from("fmt"), Cbor::from("none")),
            (Cbor::from("attStmt"), Cbor::Map(Vec::new())),
            (Cbor::from("authData"), Cbor::Bytes(auth)),
        ]);
        let mut attestation_object = Vec::new();
        ciborium::into_writer(&attestation, &mut attestation_object).unwrap();
        json!({
            "id": self.id(),
            "rawId": self.id(),
            "type": "public-key",
            "response": {
                "clientDataJSON": URL_SAFE_NO_PAD.encode(self.client_data("webauthn.create", challenge)),
                "attestationObject": URL_SAFE_NO_PAD.encode(attestation_object),
            },
        })
    }

    /// The answer to `navigator.credentials.get` over a challenge (base64url).
    pub fn sign(&mut self, challenge: &str) -> Value {
        let count = self.next_count();
        let mut auth = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        auth.push(self.flags());
        auth.extend_from_slice(&count.to_be_bytes());
        let client_data = self.client_data("webauthn.get", challenge);
        let mut signed = auth.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data));
        let signature = match &self.key {
            Key::Es256(pair, _) => pair
                .sign(&SystemRandom::new(), &signed)
                .unwrap()
                .as_ref()
                .to_vec(),
            Key::Ed25519(key) => key.sign(&signed).to_bytes().to_vec(),
        };
        json!({
            "id": self.id(),
            "rawId": self.id(),
            "type": "public-key",
            "response": {
                "clientDataJSON": URL_SAFE_NO_PAD.encode(client_data),
                "authenticatorData": URL_SAFE_NO_PAD.encode(auth),
                "signature": URL_SAFE_NO_PAD.encode(signature),
                "userHandle": null,
            },
        })
    }

    /// The answer to a statement's signing request (`{"statement", "options"}`).
    pub fn sign_request(&mut self, request: &Value) -> Value {
        let challenge = request["options"]["challenge"]
            .as_str()
            .expect("a challenge");
        self.sign(challenge)
    }
}
