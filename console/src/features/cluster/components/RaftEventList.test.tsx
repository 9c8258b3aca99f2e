import { render, screen } from '@testing-library/react';
import { raftEvent } from '../../../test/fixtures';
import { RaftEventList } from './RaftEventList';

describe('RaftEventList', () => {
  it('says how long an election took and what a membership change did', () => {
    render(
      <RaftEventList
        events={[
          raftEvent({ kind: 'election_started', node_id: 2, at_ms: 1 }),
          raftEvent({ kind: 'leader_changed', leader_id: 2, duration_ms: 184, at_ms: 2 }),
          raftEvent({ kind: 'membership_changed', detail: 'voters [1, 2, 4] learners []', at_ms: 3 }),
        ]}
      />,
    );
    expect(screen.getByText('Node 2 elected leader after 184 ms')).toBeInTheDocument();
    expect(screen.getByText('Node 2 started an election')).toBeInTheDocument();
    expect(screen.getByText('Membership changed: voters [1, 2, 4] learners []')).toBeInTheDocument();
  });

  it('tells a snapshot received from one installed', () => {
    render(
      <RaftEventList
        events={[
          raftEvent({ kind: 'snapshot_received', node_id: 3, detail: 'index 1200 term 2 from node 1', at_ms: 1 }),
          raftEvent({ kind: 'snapshot_installed', node_id: 3, detail: 'index 1200 term 2', at_ms: 2 }),
        ]}
      />,
    );
    expect(screen.getByText('Node 3 received a snapshot (index 1200 term 2 from node 1)')).toBeInTheDocument();
    expect(screen.getByText('Node 3 installed a snapshot (index 1200 term 2)')).toBeInTheDocument();
  });
});
