// Schema validation of rendered objects against the Kubernetes OpenAPI types, two ways:
// 1. kubernetes-models' own validators (construct the model class, call .validate()):
//    required fields, types, enums, formats. They ignore unknown fields (the OpenAPI schemas
//    carry no additionalProperties: false), and a typo such as `readinesProbe` is exactly the
//    mistake that slips through `kubectl apply` on older clusters.
// 2. A strict pass that type-checks each object, as an object literal, against the model's
//    TypeScript interface: excess-property checks catch every unknown field at any depth.
import path from "node:path";
import ts from "typescript";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { Job } from "kubernetes-models/batch/v1/Job";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { CERTIFICATE_API, validateCertificate } from "./certificate-schema.js";
import { objectRef, type K8sObject } from "./manifest.js";
import { repoRoot } from "./repo-root.js";

export interface SchemaIssue {
  readonly object: string;
  /** JSON path inside the object, e.g. "spec.template.spec.containers[0].readinesProbe". */
  readonly path: string;
  readonly message: string;
}

interface ModelEntry {
  readonly create: (data: unknown) => { validate(): void };
  /** Module and interface the strict pass checks against. */
  readonly typeModule: string;
  readonly typeName: string;
}

/** A model class fed unchecked data: its validate() is the check, so the data's type is not claimed. */
function unchecked<T>(Model: new (data: never) => T): (data: unknown) => T {
  return (data) => new Model(data as never);
}

const MODELS: Record<string, ModelEntry> = {
  "v1/ConfigMap": {
    create: unchecked(ConfigMap),
    typeModule: "kubernetes-models/v1/ConfigMap",
    typeName: "IConfigMap",
  },
  "v1/Namespace": {
    create: unchecked(Namespace),
    typeModule: "kubernetes-models/v1/Namespace",
    typeName: "INamespace",
  },
  "v1/Secret": {
    create: unchecked(Secret),
    typeModule: "kubernetes-models/v1/Secret",
    typeName: "ISecret",
  },
  "v1/Service": {
    create: unchecked(Service),
    typeModule: "kubernetes-models/v1/Service",
    typeName: "IService",
  },
  "v1/ServiceAccount": {
    create: unchecked(ServiceAccount),
    typeModule: "kubernetes-models/v1/ServiceAccount",
    typeName: "IServiceAccount",
  },
  "apps/v1/Deployment": {
    create: unchecked(Deployment),
    typeModule: "kubernetes-models/apps/v1/Deployment",
    typeName: "IDeployment",
  },
  "apps/v1/StatefulSet": {
    create: unchecked(StatefulSet),
    typeModule: "kubernetes-models/apps/v1/StatefulSet",
    typeName: "IStatefulSet",
  },
  "policy/v1/PodDisruptionBudget": {
    create: unchecked(PodDisruptionBudget),
    typeModule: "kubernetes-models/policy/v1/PodDisruptionBudget",
    typeName: "IPodDisruptionBudget",
  },
  // The secure default's admin-credential Job and its RBAC, and the NetworkPolicy.
  "batch/v1/Job": {
    create: unchecked(Job),
    typeModule: "kubernetes-models/batch/v1/Job",
    typeName: "IJob",
  },
  "networking.k8s.io/v1/NetworkPolicy": {
    create: unchecked(NetworkPolicy),
    typeModule: "kubernetes-models/networking.k8s.io/v1/NetworkPolicy",
    typeName: "INetworkPolicy",
  },
  "rbac.authorization.k8s.io/v1/Role": {
    create: unchecked(Role),
    typeModule: "kubernetes-models/rbac.authorization.k8s.io/v1/Role",
    typeName: "IRole",
  },
  "rbac.authorization.k8s.io/v1/RoleBinding": {
    create: unchecked(RoleBinding),
    typeModule: "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding",
    typeName: "IRoleBinding",
  },
};

function modelKey(o: K8sObject): string {
  return `${o.apiVersion}/${o.kind}`;
}

/** Pass 1: the models' validators. Unknown kinds are an issue: nothing would check them. */
export function validateWithModels(objects: readonly K8sObject[]): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  for (const o of objects) {
    // cert-manager's Certificate (the TLS overlay): a hand-written schema, unknown fields included.
    if (modelKey(o) === CERTIFICATE_API) {
      issues.push(
        ...validateCertificate(o).map((i) => ({
          object: objectRef(o),
          path: i.path,
          message: i.message,
        })),
      );
      continue;
    }
    const entry = MODELS[modelKey(o)];
    if (entry === undefined) {
      issues.push({
        object: objectRef(o),
        path: "",
        message: `no schema known for ${modelKey(o)}`,
      });
      continue;
    }
    const { apiVersion: _apiVersion, kind: _kind, ...data } = o;
    try {
      entry.create(data).validate();
    } catch (e) {
      issues.push({ object: objectRef(o), path: "", message: (e as Error).message });
    }
  }
  return issues;
}

/** Pass 2: unknown fields (and type mismatches) through TypeScript excess-property checks. */
export function validateStrict(objects: readonly K8sObject[]): SchemaIssue[] {
  const known = objects.filter((o) => MODELS[modelKey(o)] !== undefined);
  if (known.length === 0) return [];
  const root = repoRoot();
  const fileName = path.join(root, "__tern_k8s_strict_check__.ts");
  const source = strictSource(known);
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const sourceFile = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, true);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === fileName ? sourceFile : getSourceFile(name, language, ...rest);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const program = ts.createProgram([fileName], options, host);
  const issues: SchemaIssue[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, " ");
    if (diagnostic.file?.fileName !== fileName || diagnostic.start === undefined) {
      issues.push({ object: "<strict check>", path: "", message });
      continue;
    }
    const located = locate(sourceFile, diagnostic.start, known);
    issues.push({ object: located.object, path: located.path, message: shorten(message) });
  }
  return issues;
}

export function validateSchemas(objects: readonly K8sObject[]): SchemaIssue[] {
  return [...validateWithModels(objects), ...validateStrict(objects)];
}

function strictSource(objects: readonly K8sObject[]): string {
  const imports = new Set<string>();
  const declarations: string[] = [];
  objects.forEach((o, index) => {
    const entry = MODELS[modelKey(o)]!;
    imports.add(`import type { ${entry.typeName} } from "${entry.typeModule}";`);
    declarations.push(
      `export const object${index}: ${entry.typeName} = ${JSON.stringify(o, null, 1)};`,
    );
  });
  return [...imports, ...declarations].join("\n") + "\n";
}

/** Maps a diagnostic position back to (object, JSON path) by walking up the literal's AST. */
function locate(
  file: ts.SourceFile,
  position: number,
  objects: readonly K8sObject[],
): { object: string; path: string } {
  let node = findInnermost(file, position);
  const segments: string[] = [];
  let objectIndex = -1;
  for (let depth = 0; node !== undefined && depth < 256; depth++) {
    const parent: ts.Node | undefined = node.parent;
    if (ts.isPropertyAssignment(node)) segments.unshift(propertyName(node.name));
    if (parent !== undefined && ts.isArrayLiteralExpression(parent))
      segments.unshift(`[${parent.elements.indexOf(node as ts.Expression)}]`);
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name))
      objectIndex = Number(node.name.text.replace("object", ""));
    node = parent;
  }
  const o = objects[objectIndex];
  return {
    object: o === undefined ? "<unknown>" : objectRef(o),
    path: segments.join(".").replace(/\.\[/g, "["),
  };
}

function findInnermost(node: ts.Node, position: number): ts.Node | undefined {
  for (let depth = 0; depth < 256; depth++) {
    const child = node.getChildren().find((c) => c.getStart() <= position && position < c.getEnd());
    if (child === undefined) return node;
    node = child;
  }
  return node;
}

function propertyName(name: ts.PropertyName): string {
  return ts.isStringLiteral(name) || ts.isIdentifier(name) || ts.isNumericLiteral(name)
    ? name.text
    : name.getText();
}

const MESSAGE_CHARS_MAX = 300;

function shorten(message: string): string {
  return message.length <= MESSAGE_CHARS_MAX ? message : message.slice(0, MESSAGE_CHARS_MAX) + "…";
}
