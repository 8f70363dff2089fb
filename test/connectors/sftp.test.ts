// SFTP connector: real ssh2 server (test/support/servers.ts) over a temp directory.
import { startSftpServer } from '../support/servers.ts';
import { fileConnectorSuite } from './_file-suite.ts';

fileConnectorSuite('sftp', startSftpServer);
