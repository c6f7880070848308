// Schema check of cert-manager's Certificate (cert-manager.io/v1), which kubernetes-models does
// not ship: the fields of the v1 API with their types and enums, unknown fields included (a
// typo such as `dnsName:` would otherwise reach the cluster and be dropped silently).
// Hand-written from cert-manager's v1 CRD; covers the fields tern uses and their siblings.
import type { K8sObject } from "./manifest.js";

export interface CertificateIssue {
  readonly path: string;
  readonly message: string;
}

type Shape =
  | { readonly type: "string"; readonly enum?: readonly string[]; readonly pattern?: RegExp }
  | { readonly type: "integer" | "boolean" | "any" }
  | { readonly type: "array"; readonly items: Shape }
  | {
      readonly type: "object";
      readonly fields: Readonly<Record<string, Shape>>;
      readonly required?: readonly string[];
    };

const str: Shape = { type: "string" };
const strings: Shape = { type: "array", items: str };
const any: Shape = { type: "any" };
/** Go's time.ParseDuration syntax, as cert-manager reads duration and renewBefore. */
const duration: Shape = { type: "string", pattern: /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/ };
const USAGES = [
  "signing",
  "digital signature",
  "content commitment",
  "key encipherment",
  "key agreement",
  "data encipherment",
  "cert sign",
  "crl sign",
  "encipher only",
  "decipher only",
  "any",
  "server auth",
  "client auth",
  "code signing",
  "email protection",
  "s/mime",
  "ipsec end system",
  "ipsec tunnel",
  "ipsec user",
  "timestamping",
  "ocsp signing",
  "microsoft sgc",
  "netscape sgc",
] as const;

const SPEC: Shape = {
  type: "object",
  required: ["secretName", "issuerRef"],
  fields: {
    secretName: str,
    issuerRef: { type: "object", required: ["name"], fields: { name: str, kind: str, group: str } },
    commonName: str,
    literalSubject: str,
    subject: {
      type: "object",
      fields: {
        ...Object.fromEntries(
          [
            "organizations",
            "countries",
            "organizationalUnits",
            "localities",
            "provinces",
            "streetAddresses",
            "postalCodes",
          ].map((k): [string, Shape] => [k, strings]),
        ),
        serialNumber: str,
      },
    },
    duration,
    renewBefore: duration,
    renewBeforePercentage: { type: "integer" },
    dnsNames: strings,
    ipAddresses: strings,
    uris: strings,
    emailAddresses: strings,
    otherNames: { type: "array", items: { type: "object", fields: { oid: str, utf8Value: str } } },
    isCA: { type: "boolean" },
    usages: { type: "array", items: { type: "string", enum: USAGES } },
    privateKey: {
      type: "object",
      fields: {
        algorithm: { type: "string", enum: ["RSA", "ECDSA", "Ed25519"] },
        encoding: { type: "string", enum: ["PKCS1", "PKCS8"] },
        rotationPolicy: { type: "string", enum: ["Never", "Always"] },
        size: { type: "integer" },
      },
    },
    encodeUsagesInRequest: { type: "boolean" },
    revisionHistoryLimit: { type: "integer" },
    secretTemplate: { type: "object", fields: { annotations: any, labels: any } },
    keystores: any,
    additionalOutputFormats: {
      type: "array",
      items: {
        type: "object",
        required: ["type"],
        fields: { type: { type: "string", enum: ["DER", "CombinedPEM"] } },
      },
    },
    nameConstraints: any,
  },
};

const CERTIFICATE: Shape = {
  type: "object",
  required: ["apiVersion", "kind", "metadata", "spec"],
  fields: { apiVersion: str, kind: str, metadata: any, spec: SPEC, status: any },
};

export const CERTIFICATE_API = "cert-manager.io/v1/Certificate";

export function validateCertificate(o: K8sObject): CertificateIssue[] {
  const issues: CertificateIssue[] = [];
  if (typeof o.metadata?.name !== "string" || o.metadata.name === "")
    issues.push({ path: "metadata.name", message: "is required" });
  check(o, CERTIFICATE, "", issues);
  return issues;
}

function check(value: unknown, shape: Shape, at: string, issues: CertificateIssue[]): void {
  const where = at === "" ? "(root)" : at;
  switch (shape.type) {
    case "any":
      return;
    case "string":
      if (typeof value !== "string") {
        issues.push({ path: where, message: `expected a string, got ${JSON.stringify(value)}` });
        return;
      }
      if (shape.enum !== undefined && !shape.enum.includes(value))
        issues.push({ path: where, message: `"${value}" is not one of ${shape.enum.join(", ")}` });
      if (shape.pattern !== undefined && !shape.pattern.test(value))
        issues.push({ path: where, message: `"${value}" is not a duration such as 2160h` });
      return;
    case "integer":
      if (!Number.isInteger(value))
        issues.push({ path: where, message: `expected an integer, got ${JSON.stringify(value)}` });
      return;
    case "boolean":
      if (typeof value !== "boolean")
        issues.push({ path: where, message: `expected a boolean, got ${JSON.stringify(value)}` });
      return;
    case "array":
      if (!Array.isArray(value)) {
        issues.push({ path: where, message: "expected an array" });
        return;
      }
      value.forEach((item, i) => check(item, shape.items, `${at}[${i}]`, issues));
      return;
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        issues.push({ path: where, message: "expected an object" });
        return;
      }
      const record = value as Record<string, unknown>;
      for (const name of shape.required ?? [])
        if (record[name] === undefined)
          issues.push({ path: join(at, name), message: "is required" });
      for (const [name, field] of Object.entries(record)) {
        const fieldShape = shape.fields[name];
        if (fieldShape === undefined)
          issues.push({ path: join(at, name), message: `unknown field "${name}"` });
        else check(field, fieldShape, join(at, name), issues);
      }
      return;
    }
  }
}

function join(at: string, name: string): string {
  return at === "" ? name : `${at}.${name}`;
}
