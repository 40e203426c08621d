// One GoogleSQL reference server for the whole test run; test files connect with `referenceEngine()`.
import type { TestProject } from "vitest/node";
import { GoogleSqlServer } from "./googlesql.ts";

declare module "vitest" {
  export interface ProvidedContext {
    googleSqlPort: number;
  }
}

export default async function setup(project: TestProject) {
  const server = await GoogleSqlServer.start();
  project.provide("googleSqlPort", server.port);
  return () => server.stop();
}
