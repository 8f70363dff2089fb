// The built-in connector catalogue: the same ids on every installation (seeded by the
// migration 0002_connectors). Built-in connectors belong to no company (company_id NULL),
// are visible to every company and are read-only through the API.
//
// Changing this list after a release needs a new migration that inserts or updates the rows:
// 0002_connectors inserts the catalogue as it was when it ran.

/** Which client of src/modules/connectors/runtime runs the connector's actions; null: none. */
export type ConnectorRuntime = 'sftp' | 'ftp' | 'http';

export const AUTH_TYPES = ['username_password', 'basic_auth', 'api_key', 'oauth2', 'refreshable_token', 'none'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

export const CONTYPES = ['connector', 'helper'] as const;
export const CONNECTOR_STATUSES = ['active', 'draft', 'paused'] as const;
/** `method` of an action: the HTTP method, or for file connectors what the action does to the server. */
export const ACTION_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'ANY'] as const;

export interface BuiltinAction {
  id: string;
  name: string;
  method: (typeof ACTION_METHODS)[number];
  short_description: string;
  input_schema: Record<string, unknown>;
}

export interface BuiltinConnector {
  id: string;
  name: string;
  contype: (typeof CONTYPES)[number];
  status: (typeof CONNECTOR_STATUSES)[number];
  auth_types: AuthType[];
  base_domain: string | null;
  short_description: string;
  tags: string[];
  runtime: ConnectorRuntime | null;
  actions: BuiltinAction[];
}

export const FTP_CONNECTOR_ID = 'e9b31c1b-a892-4e68-b123-1482f8fc9326';
export const SFTP_CONNECTOR_ID = '7d850823-0528-4671-b1d8-751f47547992';
export const HTTP_CONNECTOR_ID = '0f926b7e-fc85-4a77-ab42-bd02fabce0d9';
export const FLOWGATE_CONNECTOR_ID = '8d0f811e-580c-4f75-85c2-52b7e7a3c526';
export const ZENDESK_CONNECTOR_ID = 'fe137c1a-c8d6-4862-aac6-08c07713b94d';
export const GOOGLE_SHEETS_CONNECTOR_ID = '52001078-78bb-4ce2-a282-a45a2e9306a0';
export const SALESFORCE_CONNECTOR_ID = '7ac781ca-0c66-4010-a3e2-b24c52a21c12';
export const HUBSPOT_CONNECTOR_ID = 'a3d14eea-ce0f-41aa-bfa8-59632524852d';
export const SLACK_CONNECTOR_ID = '69b3ab3b-234e-4652-bfef-0a88dea7575a';
export const DATA_MAPPER_CONNECTOR_ID = 'b22783c5-1654-4951-a600-358ba7366feb';

/** created_at/updated_at of every built-in row (fixed, so the rows are identical everywhere). */
export const BUILTIN_CREATED_AT = '2026-01-01T00:00:00.000Z';

const pathProp = (description: string) => ({ type: 'string', maxLength: 4096, description });

const fileActions = (ids: [string, string, string, string]): BuiltinAction[] => [
  {
    id: ids[0], name: 'list_files', method: 'GET',
    short_description: 'List the files and directories of a directory below the endpoint path.',
    input_schema: {
      type: 'object', additionalProperties: false,
      properties: { path: pathProp('Directory relative to the endpoint path; empty: the endpoint path itself') },
    },
  },
  {
    id: ids[1], name: 'upload_file', method: 'PUT',
    short_description: 'Write a file below the endpoint path (replaces an existing file).',
    input_schema: {
      type: 'object', additionalProperties: false, required: ['path', 'content'],
      properties: {
        path: pathProp('File relative to the endpoint path'),
        content: { type: 'string', description: 'File content, at most 5 MiB once decoded' },
        content_encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
      },
    },
  },
  {
    id: ids[2], name: 'download_file', method: 'GET',
    short_description: 'Read a file below the endpoint path (at most 5 MiB).',
    input_schema: {
      type: 'object', additionalProperties: false, required: ['path'],
      properties: { path: pathProp('File relative to the endpoint path') },
    },
  },
  {
    id: ids[3], name: 'delete_file', method: 'DELETE',
    short_description: 'Delete a file below the endpoint path.',
    input_schema: {
      type: 'object', additionalProperties: false, required: ['path'],
      properties: { path: pathProp('File relative to the endpoint path') },
    },
  },
];

const requestAction = (id: string): BuiltinAction => ({
  id, name: 'request', method: 'ANY',
  short_description: 'Send an HTTP request to the credential\'s endpoint with its authentication.',
  input_schema: {
    type: 'object', additionalProperties: false,
    properties: {
      method: { type: 'string', maxLength: 16, default: 'GET' },
      url: { type: 'string', maxLength: 8192, description: 'Absolute, or relative to the credential\'s api_endpoint' },
      query: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean', 'array', 'null'] } },
      headers: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean', 'null'] } },
      body: { description: 'A string is sent as is; anything else as JSON' },
    },
  },
});

const HTTP_AUTH_TYPES: AuthType[] = ['none', 'basic_auth', 'username_password', 'api_key', 'oauth2', 'refreshable_token'];

export const BUILTIN_CONNECTORS: readonly BuiltinConnector[] = [
  {
    id: FTP_CONNECTOR_ID, name: 'FTP', contype: 'connector', status: 'active', auth_types: ['username_password'],
    base_domain: null, short_description: 'Files on an FTP or FTPS (explicit TLS) server: list, upload, download, delete.',
    tags: ['files', 'transfer'], runtime: 'ftp',
    actions: fileActions(['26c571c7-e31a-44a1-ba70-84fc0b9406c2', '41c6f6b5-e3f2-4abe-b363-b7bad3d1d9fb', '654f82f6-f1cd-4631-8ea4-486ec711e783', 'f8a1be69-6046-463c-a2d5-019dd39cebe0']),
  },
  {
    id: SFTP_CONNECTOR_ID, name: 'SFTP', contype: 'connector', status: 'active', auth_types: ['username_password'],
    base_domain: null, short_description: 'Files on an SFTP (SSH) server: list, upload, download, delete.',
    tags: ['files', 'transfer'], runtime: 'sftp',
    actions: fileActions(['425111fb-c7bf-4219-87e4-2e75de5529b1', '2e116dbe-221a-4e0b-8e45-ff5b7b459832', '1d859b5c-15fa-4e86-98ab-443dc1f3e822', '6e7cfa94-3532-478c-a85d-19c414fbdd47']),
  },
  {
    id: HTTP_CONNECTOR_ID, name: 'HTTP', contype: 'connector', status: 'active', auth_types: HTTP_AUTH_TYPES,
    base_domain: null, short_description: 'Any REST API: requests to the credential\'s endpoint with its authentication.',
    tags: ['http', 'rest'], runtime: 'http',
    actions: [requestAction('5d68387c-a8e4-476a-a5db-54ee98166daf')],
  },
  {
    id: FLOWGATE_CONNECTOR_ID, name: 'flowgate', contype: 'connector', status: 'active', auth_types: ['basic_auth'],
    base_domain: null, short_description: 'This flowgate\'s own API, reached with Basic authentication: e-mail and personal access token.',
    tags: ['flowgate', 'http'], runtime: 'http',
    actions: [requestAction('0f744331-550e-46e4-80fe-24eaeed6aa22')],
  },
  {
    id: ZENDESK_CONNECTOR_ID, name: 'Zendesk', contype: 'connector', status: 'active', auth_types: ['basic_auth', 'api_key', 'oauth2'],
    base_domain: 'zendesk.com', short_description: 'Zendesk Support: tickets, users, organisations.',
    tags: ['support', 'saas'], runtime: 'http',
    actions: [requestAction('bf172a4b-6c05-43e4-88c0-a28358a576a4')],
  },
  {
    id: GOOGLE_SHEETS_CONNECTOR_ID, name: 'Google Sheets', contype: 'connector', status: 'active', auth_types: ['oauth2', 'refreshable_token'],
    base_domain: 'sheets.googleapis.com', short_description: 'Google Sheets: read and write spreadsheet values.',
    tags: ['spreadsheet', 'google', 'saas'], runtime: 'http',
    actions: [requestAction('0fb6f1e5-a938-4d20-b9d0-be6b2b0cfaeb')],
  },
  {
    id: SALESFORCE_CONNECTOR_ID, name: 'Salesforce', contype: 'connector', status: 'active', auth_types: ['oauth2', 'refreshable_token'],
    base_domain: 'salesforce.com', short_description: 'Salesforce CRM: records and queries through the REST API.',
    tags: ['crm', 'saas'], runtime: 'http',
    actions: [requestAction('a6ef25af-e5c4-4fe5-a26a-94e072252f4b')],
  },
  {
    id: HUBSPOT_CONNECTOR_ID, name: 'HubSpot', contype: 'connector', status: 'active', auth_types: ['api_key', 'oauth2', 'refreshable_token'],
    base_domain: 'api.hubapi.com', short_description: 'HubSpot CRM: contacts, companies, deals.',
    tags: ['crm', 'marketing', 'saas'], runtime: 'http',
    actions: [requestAction('da30ee94-40cf-4587-904a-10267ddac49a')],
  },
  {
    id: SLACK_CONNECTOR_ID, name: 'Slack', contype: 'connector', status: 'active', auth_types: ['api_key', 'oauth2'],
    base_domain: 'slack.com', short_description: 'Slack: post messages, read channels.',
    tags: ['chat', 'saas'], runtime: 'http',
    actions: [requestAction('bf22d022-81c9-42dd-a969-8f0894581797')],
  },
  {
    id: DATA_MAPPER_CONNECTOR_ID, name: 'Data Mapper', contype: 'helper', status: 'active', auth_types: [],
    base_domain: null, short_description: 'A helper that reshapes data between steps; it reaches no external system and needs no credential.',
    tags: ['helper'], runtime: null,
    actions: [],
  },
];
