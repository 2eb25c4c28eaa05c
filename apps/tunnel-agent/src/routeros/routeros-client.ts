/** One session on a router. `exec` resolves with the command's output, or rejects when RouterOS reports an error. */
export interface RouterOsClient {
  exec(command: string): Promise<string>;
  close(): void;
}

export interface RouterOsConnector {
  connect(target: { host: string; port: number }): Promise<RouterOsClient>;
}
