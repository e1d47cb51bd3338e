%% Writes the otp_* seeds of tests/fuzz/corpus/dist_packets: control messages and messages as an
%% OTP node encodes them (term_to_binary, with real pids and references of a distributed node),
%% in the pass-through packets a beamlet connection reads ('p', the control message, the
%% message), behind the fuzz target's two phase bytes (connected phase, no packet limit).
%% The erl_packet_* seeds, captured from a real connection, use the atom-cache header that a
%% beamlet node does not negotiate, so they reach the packet cutter but not the decoder.
%%
%%   erlc dist_packets_seeds.erl && erl -name seeds@127.0.0.1 -noshell \
%%       -run dist_packets_seeds main tests/fuzz/corpus/dist_packets
-module(dist_packets_seeds).
-export([main/1]).

packet(Control) ->
    Body = <<"p", (term_to_binary(Control))/binary>>,
    <<(byte_size(Body)):32, Body/binary>>.
packet(Control, Message) ->
    Body = <<"p", (term_to_binary(Control))/binary, (term_to_binary(Message))/binary>>,
    <<(byte_size(Body)):32, Body/binary>>.

main([Dir]) ->
    P = self(),
    Q = spawn(fun() -> ok end),
    R = make_ref(),
    Tick = <<0:32>>,
    Seeds = [
      {"otp_send", [packet({2, '', Q}, {hello, [1, 2, 3], <<"bin">>, 3.5, #{k => v}})]},
      {"otp_reg_send", [packet({6, P, '', rex}, {P, {call, erlang, node, [], P}})]},
      {"otp_link_exit", [Tick, packet({1, P, Q}), packet({3, P, Q, {badarg, [{m, f, 1, []}]}}),
                         packet({4, P, Q})]},
      {"otp_monitor", [packet({19, P, Q, R}), packet({20, P, Q, R}),
                       packet({21, Q, P, R, noproc}), packet({19, P, rex, R})]},
      {"otp_exit2_group_leader", [packet({8, P, Q, kill}), packet({7, P, Q}),
                                  packet({18, P, Q, normal})]},
      {"otp_spawn_request", [packet({29, R, P, P, {erlang, apply, 2}, [link, monitor]},
                                    [fun() -> ok end, []]),
                             packet({31, R, P, Q, 1})]},
      {"otp_alias_send", [packet({33, P, R}, {reply, R, ok}), packet({34, P, R, 0}, big)]}
    ],
    [ok = file:write_file(filename:join(Dir, Name), [<<1, 255>> | Packets])
     || {Name, Packets} <- Seeds],
    halt().
