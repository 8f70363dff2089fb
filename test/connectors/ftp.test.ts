// FTP connector: real ftp-srv server (test/support/servers.ts) over a temp directory.
import { startFtpServer } from '../support/servers.ts';
import { fileConnectorSuite } from './_file-suite.ts';

fileConnectorSuite('ftp', startFtpServer);
